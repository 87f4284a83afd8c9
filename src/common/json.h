/* json.h - a tiny streaming JSON writer: nesting, commas and string escaping, nothing more. */
#ifndef SP_CLI_JSON_H
#define SP_CLI_JSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool first[JSON_MAX_DEPTH]; /* nothing written yet at this level */
	bool after_key;             /* a key was written; its value comes next */
};

void json_init(struct json *j, FILE *f);
void json_object_begin(struct json *j);
void json_object_end(struct json *j);
void json_array_begin(struct json *j);
void json_array_end(struct json *j);
/* Inside an object: the key of the next value. */
void json_key(struct json *j, const char *key);

void json_string(struct json *j, const char *s);
void json_uint(struct json *j, uint64_t v);
void json_int(struct json *j, long long v);
void json_double(struct json *j, double v); /* null if not finite */
void json_bool(struct json *j, bool v);
void json_null(struct json *j);

/* Length of the valid UTF-8 sequence at s, or 0 if it is not one (also for the
 * Prometheus writer's label values). */
int json_utf8_len(const unsigned char *s);

/* Ends the document with a newline. */
void json_end(struct json *j);

#endif
