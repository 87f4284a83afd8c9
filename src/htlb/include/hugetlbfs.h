/* hugetlbfs.h - the libhugetlbfs interface as superpage provides it (libhugetlbfs.so.0,
 * superpage-libhugetlbfs(7)): the documented functions of libhugetlbfs' hugetlbfs.h,
 * with its constants and types, declared from its manual pages. */
#ifndef _HUGETLBFS_H
#define _HUGETLBFS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* statfs(2) f_type of a hugetlbfs filesystem. */
#define HUGETLBFS_MAGIC 0x958458f6

/* Page sizes: gethugepagesize(3), gethugepagesizes(3), getpagesizes(3). */
long gethugepagesize(void);
int gethugepagesizes(long pagesizes[], int n_elem);
int getpagesizes(long pagesizes[], int n_elem);

/* Mounts and files: hugetlbfs_test_path(3), hugetlbfs_find_path(3),
 * hugetlbfs_unlinked_fd(3). */
int hugetlbfs_test_path(const char *mount);
const char *hugetlbfs_find_path(void);
const char *hugetlbfs_find_path_for_size(long page_size);
int hugetlbfs_unlinked_fd(void);
int hugetlbfs_unlinked_fd_for_size(long page_size);

#define PF_LINUX_HUGETLB 0x100000

/* get_huge_pages(3): huge pages of the default size, or NULL. */
typedef unsigned long ghp_t;
#define GHP_DEFAULT ((ghp_t)0x01UL)
#define GHP_MASK (GHP_DEFAULT)

void *get_huge_pages(size_t len, ghp_t flags);
void free_huge_pages(void *ptr);

/* get_hugepage_region(3): huge pages where possible. */
typedef unsigned long ghr_t;
#define GHR_STRICT ((ghr_t)0x10000000U)   /* huge pages or NULL */
#define GHR_FALLBACK ((ghr_t)0x20000000U) /* smaller pages when huge ones are short */
#define GHR_COLOR ((ghr_t)0x40000000U)    /* start at a cache line of the slack */
#define GHR_DEFAULT (GHR_FALLBACK | GHR_COLOR)
#define GHR_MASK (GHR_FALLBACK | GHR_STRICT | GHR_COLOR)

void *get_hugepage_region(size_t len, ghr_t flags);
void free_hugepage_region(void *ptr);

#ifdef __cplusplus
}
#endif
#endif /* _HUGETLBFS_H */
