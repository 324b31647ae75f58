/* SPDX-License-Identifier: BSD-3-Clause */
/* common/profile.c: the profiling request (see profile.h). */
#include "config.h"

#include "profile.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "status.h"

void dlpar_profile_init(dlpar_profile_request *req)
{
  memset(req, 0, sizeof(*req));
  req->first_step = req->last_step = -1;
  req->ranks.count = 1; /* rank 0 */
}

int dlpar_profile_parse_tool(const char *text, dlpar_profile_request *req, dlpar_error *err)
{
  char quoted[64];
  static const char *const names[] = {"off", "nvtx", "nsys"};
  for (int i = 0; i < 3; i++) {
    if (strcmp(text, names[i]) == 0) {
      req->tool = (dlpar_profile_tool)i;
      return DLPAR_OK;
    }
  }
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-profile=%s: unknown profiler (use nsys, nvtx or off)",
                         dlpar_quote(text, quoted, sizeof(quoted)));
}

int dlpar_profile_parse_steps(const char *text, dlpar_profile_request *req, dlpar_error *err)
{
  char quoted[64];
  const char *dash = strchr(text, '-');
  const long max_step = 1000000000;
  long first, last;
  dlpar_quote(text, quoted, sizeof(quoted));
  if (strlen(text) > DLPAR_TEXT_MAX || !dash ||
      dlpar_parse_uint(text, (size_t)(dash - text), max_step, &first) != 0 ||
      dlpar_parse_uint(dash + 1, strlen(dash + 1), max_step, &last) != 0) {
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-profile-steps=%s: expected a step range A-B (e.g. "
                           "--dl-profile-steps=30-40)", quoted);
  }
  if (first > last)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-profile-steps=%s: the range is empty (use A-B with A <= B, e.g. "
                           "30-40)", quoted);
  req->first_step = first;
  req->last_step = last;
  req->steps_given = true;
  return DLPAR_OK;
}

int dlpar_profile_parse_ranks(const char *text, dlpar_profile_request *req, dlpar_error *err)
{
  char quoted[64];
  if (dlpar_rank_list_parse(text, &req->ranks) != 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT,
                           "--dl-profile-ranks=%s: expected ranks like 0,2,4-7 or all (e.g. --dl-profile-ranks=0)",
                           dlpar_quote(text, quoted, sizeof(quoted)));
  req->ranks_given = true;
  return DLPAR_OK;
}

int dlpar_profile_check(const dlpar_profile_request *req, int ntasks, dlpar_error *err)
{
  const long max_rank = dlpar_rank_list_max(&req->ranks);
  if (req->tool == DLPAR_PROFILE_OFF && (req->steps_given || req->ranks_given))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-profile-%s needs a profiler (add --dl-profile=nsys or "
                           "--dl-profile=nvtx)", req->steps_given ? "steps" : "ranks");
  if (ntasks > 0 && max_rank >= ntasks)
    return dlpar_error_set(err, DLPAR_ERR_INPUT,
                           "--dl-profile-ranks: rank %ld does not exist in a step of %d tasks (use ranks 0-%d)",
                           max_rank, ntasks, ntasks - 1);
  return DLPAR_OK;
}

bool dlpar_profile_selects(const dlpar_profile_request *req, int rank)
{
  return req->tool != DLPAR_PROFILE_OFF && dlpar_rank_list_has(&req->ranks, rank);
}

const char *dlpar_profile_tool_name(dlpar_profile_tool tool)
{
  return tool == DLPAR_PROFILE_NSYS ? "nsys" : tool == DLPAR_PROFILE_NVTX ? "nvtx" : "off";
}

int dlpar_profile_output_name(const char *dir, const char *job, const char *step, int rank,
                              char *out, size_t len)
{
  int n = snprintf(out, len, "%s/dlpar-%s.%s.rank%d", dir, job, step, rank);
  return n > 0 && (size_t)n < len ? DLPAR_OK : DLPAR_ERR_INPUT;
}

void dlpar_nsys_argv(const char *output, const char *argv[DLPAR_NSYS_ARGC])
{
  const char *fixed[DLPAR_NSYS_ARGC] = {
      "nsys", "profile", "-t", "cuda,nvtx,cublas", "-c", "cudaProfilerApi",
      "--capture-range-end=stop", "-o", output};
  memcpy(argv, fixed, sizeof(fixed));
}

int dlpar_find_on_path(const char *name, const char *path, char *out, size_t len)
{
  for (const char *dir = path; dir && *dir;) {
    const char *colon = strchr(dir, ':');
    const int dir_len = colon ? (int)(colon - dir) : (int)strlen(dir);
    int n = snprintf(out, len, "%.*s/%s", dir_len, dir_len ? dir : ".", name);
    if (n > 0 && (size_t)n < len && access(out, X_OK) == 0)
      return DLPAR_OK;
    if (!colon)
      break;
    dir = colon + 1;
  }
  return DLPAR_ERR_INPUT;
}
