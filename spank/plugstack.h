/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/plugstack.h: plugstack.conf as Slurm reads it, to find dlpar's line
 * and check it before any daemon does (dlpar-check-config), and to say in
 * the plugin's refusal which file and line hold a bad key. Slurm's grammar
 * (spank.c, 22.05 to 26.05): '#' starts a comment, words are split at
 * blanks, a line is "required|optional PLUGIN ARG..." or "include GLOB"
 * (relative to the including file's directory), a missing file reads as
 * empty. dlpar's line is the one whose plugin file is spank_dlpar.so. Plain
 * C, unit-tested without Slurm. */
#ifndef DLPAR_SPANK_PLUGSTACK_H
#define DLPAR_SPANK_PLUGSTACK_H

#include <stdbool.h>
#include <stddef.h>

#include "common/status.h"

#define DLPAR_PLUGIN_FILE "spank_dlpar.so"
/* slurm.conf where SLURM_CONF is unset (Debian's Slurm, and Slurm's RPMs) */
#define DLPAR_SLURM_CONF_DEFAULT "/etc/slurm/slurm.conf"
#define DLPAR_PLUGSTACK_MAX_ARGS 64

/* The spank_dlpar.so lines of a plugstack.conf and the files it includes:
 * how many, the first one's place, type, plugin and arguments, and the
 * second one's place. argv points into args: do not copy the struct. */
typedef struct {
  int count;
  char file[4096];
  int line;
  bool required;
  char plugin[4096];
  int argc;
  char *argv[DLPAR_PLUGSTACK_MAX_ARGS];
  char args[4096];
  char second_file[4096];
  int second_line;
} dlpar_plugstack_entry;

/* Where Slurm reads plugstack.conf: slurm_conf's PlugStackConfig, else
 * plugstack.conf beside slurm_conf. DLPAR_OK, or slurm_conf unreadable. */
int dlpar_plugstack_path(const char *slurm_conf, char *out, size_t len, dlpar_error *err);

/* Reads path (which must exist) and the files it includes. DLPAR_OK, or an
 * unreadable file or includes nested too deep (a loop), said in err. */
int dlpar_plugstack_read(const char *path, dlpar_plugstack_entry *entry, dlpar_error *err);

/* dlpar-check-config: path's dlpar line as srun and the daemons will take
 * it: exactly one, required, its plugin file there, its keys good. DLPAR_OK
 * with "FILE:LINE: ok ..." in msg, else the one-line refusal. */
int dlpar_plugstack_check(const char *path, char *msg, size_t len);

/* The plugin, on a bad line: "line N of FILE" for the line with these
 * arguments in the plugstack.conf slurm_conf names, else a description
 * that names no file. */
void dlpar_plugstack_where(const char *slurm_conf, int argc, char **argv, char *where, size_t len);

/* Who reads a bad line, and so what it does there. */
typedef enum {
  DLPAR_READER_SLURMD,      /* a warning: slurmd starts and runs */
  DLPAR_READER_CLIENT,      /* srun, sbatch, salloc: the --dl-* step is refused */
  DLPAR_READER_NODE,        /* slurmstepd: the node refuses the --dl-* step */
  DLPAR_READER_NODE_BEHIND, /* ... which srun accepted: the node reads the line otherwise */
} dlpar_config_reader;

/* The line a bad plugstack.conf line gives where reader reads it: error is
 * the parser's ("plugstack.conf: ..."), where dlpar_plugstack_where's, node
 * the node's name (DLPAR_READER_NODE*). */
void dlpar_config_refusal(dlpar_config_reader reader, const char *error, const char *where, const char *node,
                          char *out, size_t len);

#endif
