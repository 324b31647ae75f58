/* SPDX-License-Identifier: BSD-3-Clause */
/* tools/run.c: dlpar-run, the one-machine launcher.
 *   dlpar-run -n 4 --dl-parallel=2x2 [--dl-profile=...] [--tag-output] -- prog args
 * Plans each rank exactly as the SPANK plugin would, with the same grid,
 * topology mapping and DLPAR_* contract. It hosts a PMIx server, forks the
 * ranks, forwards signals, optionally prefixes output lines with the rank,
 * and when one rank fails ends the others and returns the first failure's
 * exit code. The program's PMIx client path is the one it takes under srun. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/clock.h"
#include "tools/run.h"
#include "common/status.h"
#include "common/taskenv.h"
#include "common/topo.h"
#include "common/text.h"
#include "include/dlpar/dlpar.h"

#define GRACE_SECONDS 5.0

typedef struct {
  pid_t pid;
  int out_fd, err_fd;      /* read ends when tagging output, else -1 */
  char partial[2][4096];   /* an unfinished line per stream */
  size_t partial_len[2];
  bool exited;
} rank_proc;

typedef struct {
  dlpar_run_args args;
  dlpar_grid grid;
  dlpar_topology topology;
  dlpar_run_server *server;
  rank_proc *ranks;
  int running;
  int first_failure;       /* exit code to return, 0 until a rank fails */
  int stopped;             /* ranks that exited DLPAR_EXIT_STOPPED: stopped early, more to do */
  double kill_deadline;    /* SIGKILL the rest at this time (0: none) */
  int signals_forwarded;
  int signal_fd, abort_pipe[2];
  int master_port;         /* the env:// contract's port: the kernel's pick for this run */
  char gloo_ifname[32];    /* the loopback interface */
} launcher;

/* One word of the usage, on the current line if it fits in 80 columns,
 * else on the next one, indented under the first option; returns the column. */
static int usage_word(int column, const char *word)
{
  static const int indent = 17;
  if (column + 1 + (int)strlen(word) > 80) {
    fprintf(stderr, "\n%*s", indent - 1, "");
    column = indent - 1;
  }
  return column + fprintf(stderr, " %s", word);
}

/* The --dl-* options as the option table (common/options.h) gives them. */
static void usage(void)
{
  char word[128];
  int column = fprintf(stderr, "usage: dlpar-run -n N");
  for (int i = 0; i < DLPAR_OPTION_COUNT; i++) {
    const dlpar_option_spec *spec = &dlpar_option_table[i];
    if (spec->arg == DLPAR_OPT_FLAG)
      snprintf(word, sizeof(word), "[--%s]", spec->name);
    else
      snprintf(word, sizeof(word), "[--%s=%s]", spec->name, spec->arginfo);
    column = usage_word(column, word);
  }
  column = usage_word(column, "[--tag-output]");
  column = usage_word(column, "[--topology=XML]");
  usage_word(column, "-- PROGRAM [ARGS...]");
  fprintf(stderr, "\nRuns N ranks of PROGRAM on this machine under a PMIx server, with the\n"
          "environment srun --dl-parallel gives them (see dlpar-run(1)). --check[=only]\n"
          "is the same as --dl-check.\n");
}

/* ------------------------------------------------------------ planning */

static int plan_rank(const launcher *l, int rank, dlpar_task_env *env, dlpar_error *err)
{
  int gpus[DLPAR_MAX_GPUS], ngpus = 0, rc;
  const char *visible = getenv("CUDA_VISIBLE_DEVICES");
  char job[32];
  memset(env, 0, sizeof(*env));
  env->grid = l->grid;
  env->rank = env->local_rank = rank;
  env->local_size = l->args.ntasks;
  env->span = DLPAR_SPAN_ERROR;
  env->options = l->args.request;
  snprintf(env->master_addr, sizeof(env->master_addr), "127.0.0.1");
  env->master_port = l->master_port;
  snprintf(env->gloo_ifname, sizeof(env->gloo_ifname), "%s", l->gloo_ifname);
  if (visible && *visible)
    ngpus = dlpar_parse_id_list(visible, gpus, DLPAR_MAX_GPUS);
  rc = dlpar_map_task(&l->topology, gpus, ngpus > 0 ? ngpus : 0, rank, l->args.ntasks, &env->binding, err);
  if (rc < 0)
    return rc;
  if (rc == DLPAR_WARN && rank == 0)
    fprintf(stderr, "dlpar-run: %s\n", err->text);
  env->profile = l->args.request.profile.tool;
  env->profile_first_step = l->args.request.profile.first_step;
  env->profile_last_step = l->args.request.profile.last_step;
  env->profile_this_rank = dlpar_profile_selects(&l->args.request.profile, rank);
  snprintf(job, sizeof(job), "local%ld", (long)getpid());
  dlpar_profile_output_name(".", job, "0", rank, env->profile_output, sizeof(env->profile_output));
  return DLPAR_OK;
}

/* The env:// contract's rendezvous point on this machine: 127.0.0.1, a port
 * the kernel picks as free, so that another dlpar-run gets another, and
 * the loopback interface for gloo. The torch names the user exported are
 * said once. */
static int plan_torch(launcher *l, dlpar_error *err)
{
  char kept[DLPAR_ERRLEN];
  if (!l->args.request.torch_env)
    return DLPAR_OK;
  if (!(l->master_port = dlpar_port_pick()))
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "no free TCP port for MASTER_PORT on this machine (export "
                           "MASTER_PORT, or --dl-env=none)");
  if (dlpar_route_interface("127.0.0.1", l->gloo_ifname, sizeof(l->gloo_ifname)) != DLPAR_OK)
    l->gloo_ifname[0] = '\0';
  if (dlpar_torch_names_set(kept, sizeof(kept)))
    fprintf(stderr, "dlpar-run: keeping your exported %s for every rank (unset them to get the run's; "
            "--dl-env=none exports none)\n", kept);
  return DLPAR_OK;
}

/* ------------------------------------------------------------ spawning */

/* In the child: the environment, the binding, then exec. Never returns. */
static void exec_rank(const launcher *l, const dlpar_task_env *env, char **pmix_env, const int out[2],
                      const int errp[2])
{
  dlpar_env_list list;
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  setpgid(0, 0); /* the terminal's Ctrl-C reaches dlpar-run, which forwards it once */
  if (out[1] >= 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(errp[1], STDERR_FILENO);
  }
  for (char **var = pmix_env; var && *var; var++)
    putenv(*var);
  /* What Open MPI's direct-launch support needs, as its Slurm and Flux
   * detection set it: no singleton, the PMIx ess and our binding. As all
   * ranks are on this machine, it also takes shared memory through ob1
   * without probing network fabrics at start, which saves about 0.2 s. */
  setenv("OMPI_MCA_schizo", "^orte", 0);
  setenv("OMPI_MCA_ess", "pmi", 0);
  setenv("OMPI_MCA_hwloc_base_binding_policy", "none", 0);
  setenv("OMPI_MCA_pml", "ob1", 0);
  /* Open MPI 4's session directory goes under the run's own directory. Two
   * runs sharing /tmp/ompi.HOST.UID race when one removes it as the other
   * starts, and a rank then fails in MPI_Init or segfaults after "shared
   * memory initialization: open(2) ENOENT", as open-mpi/ompi#8510 reports.
   * Open MPI 5 has no such variable. */
  setenv("OMPI_MCA_orte_tmpdir_base", dlpar_run_server_tmpdir(l->server), 0);
  /* Open MPI 5's modex runs as a fence, not on demand, whatever a site's
   * MCA file says (libdlpar asks for the same). When every rank is local,
   * PMIx's server holds a Get for a rank of its node that has not
   * committed for only 2 s, in pmix_server_get.c of 4.2 and 5.0. So, on
   * demand, a node-mate starting later than that failed MPI_Init. The
   * fence waits for it, as srun's server does, and libdlpar bounds that
   * wait by the rendezvous timeout. */
  setenv("OMPI_MCA_pmix_base_async_modex", "0", 0);
  if (l->args.ntasks > sysconf(_SC_NPROCESSORS_ONLN)) /* oversubscribed: yield, as mpirun does */
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  dlpar_task_env_export(env, &list);
  for (int i = 0; i < list.count; i++)
    setenv(list.var[i].name, list.var[i].value, !dlpar_env_keeps_user_value(list.var[i].name));
  dlpar_bind_cpus(env->binding.cpus); /* none allowed: the inherited set */
  execvp(l->args.program[0], l->args.program);
  fprintf(stderr, "dlpar-run: cannot run %s: %s (check the path and that it is executable)\n",
          dlpar_show(l->args.program[0]).text, strerror(errno));
  _exit(127);
}

static int spawn_rank(launcher *l, int rank, dlpar_error *err)
{
  dlpar_task_env env;
  char **pmix_env = NULL;
  int out[2] = {-1, -1}, errp[2] = {-1, -1};
  rank_proc *p = &l->ranks[rank];
  DLPAR_TRY(plan_rank(l, rank, &env, err));
  DLPAR_TRY(dlpar_run_server_client_env(l->server, rank, &pmix_env, err));
  if (l->args.tag_output && (pipe2(out, O_CLOEXEC) != 0 || pipe2(errp, O_CLOEXEC) != 0))
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "pipe: %s", strerror(errno));
  fflush(NULL);
  p->pid = fork();
  if (p->pid < 0)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "fork: %s", strerror(errno));
  if (p->pid == 0)
    exec_rank(l, &env, pmix_env, out, errp);
  for (char **var = pmix_env; var && *var; var++)
    free(*var);
  free(pmix_env);
  p->out_fd = out[0];
  p->err_fd = errp[0];
  if (out[1] >= 0) {
    close(out[1]);
    close(errp[1]);
  }
  l->running++;
  return DLPAR_OK;
}

/* ------------------------------------------------------------ supervising */

static void signal_all(launcher *l, int sig)
{
  for (int r = 0; r < l->args.ntasks; r++) {
    if (l->ranks[r].pid > 0 && !l->ranks[r].exited)
      kill(l->ranks[r].pid, sig);
  }
}

static void fail_job(launcher *l, int code)
{
  if (l->first_failure)
    return;
  l->first_failure = code ? code : 1;
  signal_all(l, SIGTERM);
  l->kill_deadline = dlpar_now() + GRACE_SECONDS;
}

static void reap(launcher *l)
{
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (int r = 0; r < l->args.ntasks; r++) {
      if (l->ranks[r].pid != pid)
        continue;
      l->ranks[r].exited = true;
      l->running--;
      if (WIFEXITED(status) && WEXITSTATUS(status) == DLPAR_EXIT_STOPPED) {
        l->stopped++;
      } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        if (!l->first_failure)
          fprintf(stderr, "dlpar-run: rank %d exited with code %d: ending the others\n", r, WEXITSTATUS(status));
        fail_job(l, WEXITSTATUS(status));
      } else if (WIFSIGNALED(status)) {
        if (!l->first_failure)
          fprintf(stderr, "dlpar-run: rank %d killed by %s: ending the others\n", r, strsignal(WTERMSIG(status)));
        fail_job(l, 128 + WTERMSIG(status));
      }
    }
  }
}

static void on_signal(launcher *l)
{
  struct signalfd_siginfo info;
  while (read(l->signal_fd, &info, sizeof(info)) == (ssize_t)sizeof(info)) {
    if (info.ssi_signo == SIGCHLD) {
      reap(l);
      continue;
    }
    /* forward once; a second interrupt kills */
    signal_all(l, l->signals_forwarded++ ? SIGKILL : (int)info.ssi_signo);
    if (!l->kill_deadline)
      l->kill_deadline = dlpar_now() + 30.0;
  }
}

static void flush_lines(rank_proc *p, int rank, int stream, bool all)
{
  FILE *out = stream ? stderr : stdout;
  char *buf = p->partial[stream];
  size_t start = 0;
  for (size_t i = 0; i < p->partial_len[stream]; i++) {
    if (buf[i] == '\n') {
      fprintf(out, "[%d] %.*s\n", rank, (int)(i - start), buf + start);
      start = i + 1;
    }
  }
  if (all && start < p->partial_len[stream]) {
    fprintf(out, "[%d] %.*s\n", rank, (int)(p->partial_len[stream] - start), buf + start);
    start = p->partial_len[stream];
  }
  memmove(buf, buf + start, p->partial_len[stream] - start);
  p->partial_len[stream] -= start;
  fflush(out);
}

static void read_output(rank_proc *p, int rank, int stream)
{
  int *fd = stream ? &p->err_fd : &p->out_fd;
  size_t room = sizeof(p->partial[0]) - p->partial_len[stream];
  ssize_t n = read(*fd, p->partial[stream] + p->partial_len[stream], room);
  if (n <= 0) {
    flush_lines(p, rank, stream, true);
    close(*fd);
    *fd = -1;
    return;
  }
  p->partial_len[stream] += (size_t)n;
  flush_lines(p, rank, stream, p->partial_len[stream] == sizeof(p->partial[0]));
}

static bool outputs_open(const launcher *l)
{
  for (int r = 0; r < l->args.ntasks; r++) {
    if (l->ranks[r].out_fd >= 0 || l->ranks[r].err_fd >= 0)
      return true;
  }
  return false;
}

static void supervise(launcher *l)
{
  const int n = l->args.ntasks;
  struct pollfd *fds = calloc((size_t)(2 * n + 2), sizeof(struct pollfd));
  if (!fds)
    return;
  while (l->running > 0 || outputs_open(l)) {
    int nfds = 2;
    fds[0] = (struct pollfd){.fd = l->signal_fd, .events = POLLIN};
    fds[1] = (struct pollfd){.fd = l->abort_pipe[0], .events = POLLIN};
    for (int r = 0; r < n; r++) {
      fds[nfds++] = (struct pollfd){.fd = l->ranks[r].out_fd, .events = POLLIN};
      fds[nfds++] = (struct pollfd){.fd = l->ranks[r].err_fd, .events = POLLIN};
    }
    poll(fds, (nfds_t)nfds, 200);
    /* An abort first: PMIx_Abort returns to the rank only after the server
     * wrote the pipe, so its exit can be in the same round, and the abort
     * is the one line that says why the job ends. */
    if (fds[1].revents) {
      int code = 1;
      if (read(l->abort_pipe[0], &code, sizeof(code)) == (ssize_t)sizeof(code))
        fail_job(l, code);
    }
    if (fds[0].revents)
      on_signal(l);
    for (int r = 0; r < n; r++) {
      if (fds[2 + 2 * r].revents)
        read_output(&l->ranks[r], r, 0);
      if (fds[3 + 2 * r].revents)
        read_output(&l->ranks[r], r, 1);
    }
    if (l->kill_deadline && dlpar_now() > l->kill_deadline) {
      signal_all(l, SIGKILL);
      l->kill_deadline = 0;
    }
  }
  free(fds);
}

/* ------------------------------------------------------------ main */

/* The run's exit status: the first failure's; else, where ranks stopped
 * early at an agreed step (a stop signal, the checkpoint written; the
 * others stop at the same step by themselves), DLPAR_EXIT_STOPPED, so that
 * a script or dlpar-restart can tell "more to do" from a failure and from
 * a finished run; else 0. */
static int exit_status(const launcher *l)
{
  if (l->first_failure)
    return l->first_failure;
  if (l->stopped == 0)
    return 0;
  fprintf(stderr, "dlpar-run: %d of %d ranks stopped early at an agreed step (exit %d: run the same command "
          "again to resume from its checkpoint, with --resume for dlpar-train)\n", l->stopped, l->args.ntasks, DLPAR_EXIT_STOPPED);
  return DLPAR_EXIT_STOPPED;
}

static int setup(launcher *l, dlpar_error *err)
{
  sigset_t set;
  DLPAR_TRY(dlpar_grid_resolve(&l->args.request.grid, l->args.ntasks, &l->grid, err));
  DLPAR_TRY(dlpar_topology_load(l->args.topology_xml[0] ? l->args.topology_xml : NULL, &l->topology, err));
  DLPAR_TRY(plan_torch(l, err));
  /* Signals are read from a signalfd; blocked before PMIx starts its thread. */
  sigemptyset(&set);
  sigaddset(&set, SIGCHLD);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGHUP);
  sigaddset(&set, SIGUSR1);
  sigprocmask(SIG_BLOCK, &set, NULL);
  l->signal_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
  l->ranks = calloc((size_t)l->args.ntasks, sizeof(rank_proc));
  if (l->signal_fd < 0 || !l->ranks || pipe2(l->abort_pipe, O_CLOEXEC) != 0)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "cannot set up the supervisor: %s", strerror(errno));
  for (int r = 0; r < l->args.ntasks; r++)
    l->ranks[r].out_fd = l->ranks[r].err_fd = -1;
  return dlpar_run_server_start(l->args.ntasks, l->abort_pipe[1], &l->server, err);
}

int main(int argc, char **argv)
{
  launcher l;
  dlpar_error err = {0};
  int rc;
  memset(&l, 0, sizeof(l));
  l.signal_fd = l.abort_pipe[0] = l.abort_pipe[1] = -1;
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  if (dlpar_run_parse_args(argc, argv, &l.args, &err) != DLPAR_OK) {
    fprintf(stderr, "dlpar-run: %s\n", err.text);
    return 2;
  }
  rc = setup(&l, &err);
  for (int r = 0; rc == DLPAR_OK && r < l.args.ntasks; r++)
    rc = spawn_rank(&l, r, &err);
  if (rc != DLPAR_OK) {
    fprintf(stderr, "dlpar-run: %s\n", err.text);
    fail_job(&l, 1);
  }
  supervise(&l);
  dlpar_run_server_stop(l.server);
  free(l.ranks);
  return exit_status(&l);
}
