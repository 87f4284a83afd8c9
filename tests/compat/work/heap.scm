;;; heap.scm - a Guile program for make compat: Boehm GC's heap (grown by 8 MiB
;;; mappings at address hints) filled with lists, vectors, strings and a hash
;;; table, collected as it goes; the output depends only on the arithmetic.
(define (build n seed)
  (let loop ((i 0) (l '()))
    (if (= i n) l
        (loop (+ i 1) (cons (make-vector 16 (modulo (+ (* i 7919) seed) 100003)) l)))))
(define keep '())
(let loop ((r 0))
  (when (< r 30)
    (set! keep (cons (build 200000 r) keep))
    (when (> (length keep) 8) (set! keep (list-head keep 8)))
    (loop (+ r 1))))
(define h (make-hash-table))
(let loop ((i 0))
  (when (< i 200000)
    (hash-set! h (string-append "k" (number->string (+ 1000000 (modulo (* i 7919) 200000)))) (* i i))
    (loop (+ i 1))))
(define sum 0)
(hash-for-each (lambda (k v) (set! sum (modulo (+ sum v (string-length k)) 1000000007))) h)
(for-each (lambda (l)
            (for-each (lambda (a) (set! sum (modulo (+ sum (vector-ref a 0) (vector-ref a 15)) 1000000007))) l))
          keep)
(display "entries ") (display (hash-count (const #t) h)) (display " sum ") (display sum) (newline)
