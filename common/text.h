/* SPDX-License-Identifier: BSD-3-Clause */
/* common/text.h: defensive parsing of user-supplied numbers, lists and
 * ranges, safe quoting of such text in messages, and stderr lines written whole.
 * Shared with spank/, where the input comes from users and is parsed inside
 * privileged slurmstepd. */
#ifndef DLPAR_TEXT_H
#define DLPAR_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Inputs longer than this are refused before parsing. */
#define DLPAR_TEXT_MAX 256

/* Parse a whole string of decimal digits, without sign or blanks, into
 * 0..max. Returns 0, or -1 if it is empty or not all digits, or -2 if
 * above max. */
int dlpar_parse_uint(const char *text, size_t len, long max, long *out);

/* A whole decimal number with an optional leading '-' in [lo, hi]; 0 or -1. */
int dlpar_parse_int(const char *text, long lo, long hi, long *out);

/* A decimal number in (0, max], such as "120" or "0.5", without sign,
 * exponent or blanks. Returns 0 or -1. */
int dlpar_parse_positive(const char *text, double max, double *out);
/* dlpar_parse_positive up to a year: a number of seconds. */
int dlpar_parse_seconds(const char *text, double *out);

/* How much of one input text a message shows, NUL included: longer is
 * cut with "...". */
#define DLPAR_SHOWN_LEN 160

/* Writes input text into buf for a one-line message. Printable ASCII and
 * printable UTF-8 go as they are, and \n, \r and \t as C writes them.
 * Every other byte goes as \xNN: control characters, DEL, invalid UTF-8,
 * C1 controls, line and paragraph separators, bidirectional overrides and
 * U+FFFE or U+FFFF. The text is cut with "..." where buf is full. NULL
 * shows as "(none)". Always NUL-terminates. Returns buf. */
const char *dlpar_quote(const char *text, char *buf, size_t buflen);

/* The UTF-8 character at text: its length, 1 to 4, and code point, or 0
 * for an invalid, overlong or surrogate sequence, or one cut by the NUL. */
size_t dlpar_utf8_decode(const char *text, unsigned long *code);

/* dlpar_quote into a value, so a message quotes input where it names it:
 *   dlpar_error_set(err, DLPAR_ERR_INPUT, "%s: no such file", dlpar_show(path).text);
 * The returned struct lives to the end of the full expression (C11 6.2.4). */
typedef struct {
  char text[DLPAR_SHOWN_LEN];
} dlpar_shown;

dlpar_shown dlpar_show(const char *text);

/* A formatted message made one line in place. Every character dlpar_quote
 * would escape becomes one space: control bytes, C1 controls, line and
 * paragraph separators, bidirectional overrides and invalid UTF-8 bytes.
 * A library's own error text, such as NCCL's last error, may hold
 * newlines. This is the last guard where a message is recorded; input text
 * is still quoted with dlpar_show where the message names it. Returns
 * text. */
char *dlpar_one_line(char *text);

/* Whether text holds no control byte, for a name that becomes a path. */
bool dlpar_is_printable(const char *text);

/* A list of ranks "0,2,5-7" or "all": selected[r] for r in [0, n). */
typedef struct {
  bool all;
  int count;             /* number of ranges */
  struct { long lo, hi; } range[32];
} dlpar_rank_list;

int dlpar_rank_list_parse(const char *text, dlpar_rank_list *out);
bool dlpar_rank_list_has(const dlpar_rank_list *list, long rank);
long dlpar_rank_list_max(const dlpar_rank_list *list);

/* The noun that agrees with the count n, for messages:
 * "%d %s", n, dlpar_plural(n, "thread", "threads"). */
const char *dlpar_plural(long n, const char *one, const char *many);

/* The median of n > 0 values, for straggler reports; sorts them in place. */
double dlpar_median_sorting(double *values, int n);

/* fprintf(stderr, ...) in one write: the ranks of a job share a stderr,
 * and glibc 2.37 and later write an unbuffered stream's printf output in
 * 128-byte pieces, so other ranks' lines land inside a long one. Longer
 * than 4 KiB is cut. */
void dlpar_eprintf(const char *format, ...) __attribute__((format(printf, 1, 2)));

#endif
