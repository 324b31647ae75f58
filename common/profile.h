/* SPDX-License-Identifier: BSD-3-Clause */
/* common/profile.h: the profiling request (--dl-profile, --dl-profile-steps,
 * --dl-profile-ranks): parsing, checking against a step, the per-rank output
 * name and the nsys command line. Shared by spank/ and libdlpar/. */
#ifndef DLPAR_PROFILE_H
#define DLPAR_PROFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "status.h"
#include "text.h"

typedef enum { DLPAR_PROFILE_OFF = 0, DLPAR_PROFILE_NVTX, DLPAR_PROFILE_NSYS } dlpar_profile_tool;

typedef struct {
  dlpar_profile_tool tool;
  long first_step, last_step; /* capture range in training steps; -1,-1: the whole run */
  bool steps_given, ranks_given;
  dlpar_rank_list ranks;      /* which ranks are profiled (default: 0) */
} dlpar_profile_request;

void dlpar_profile_init(dlpar_profile_request *req);
int dlpar_profile_parse_tool(const char *text, dlpar_profile_request *req, dlpar_error *err);
int dlpar_profile_parse_steps(const char *text, dlpar_profile_request *req, dlpar_error *err);
int dlpar_profile_parse_ranks(const char *text, dlpar_profile_request *req, dlpar_error *err);
/* Steps/ranks only with a tool; with ntasks > 0 also: the ranks exist. */
int dlpar_profile_check(const dlpar_profile_request *req, int ntasks, dlpar_error *err);
bool dlpar_profile_selects(const dlpar_profile_request *req, int rank);

const char *dlpar_profile_tool_name(dlpar_profile_tool tool);
/* <dir>/dlpar-<job>.<step>.rank<rank> (nsys adds .nsys-rep) */
int dlpar_profile_output_name(const char *dir, const char *job, const char *step, int rank,
                              char *out, size_t len);

/* The nsys command that wraps a program: nsys profile ... -o OUTPUT; the
 * caller appends the program and its arguments. */
#define DLPAR_NSYS_ARGC 9
void dlpar_nsys_argv(const char *output, const char *argv[DLPAR_NSYS_ARGC]);

/* Finds an executable `name` on the colon-separated search path. */
int dlpar_find_on_path(const char *name, const char *path, char *out, size_t len);

#endif
