/* SPDX-License-Identifier: BSD-3-Clause */
/* common/netenv.c: the site's network settings per node class (see
 * netenv.h): parsing, host lists, a node's own settings, its interfaces. */
#include "config.h"

#include "netenv.h"

#include <ctype.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* The NCCL_* names NCCL 2.28 reads (the strings of libnccl.so.2, less
 * its log levels and debug subsystems), without the prefix. */
static const char NCCL_NAMES[] =
    "ALGO ALLOC_P2P_NET_LL_BUFFERS BUFFSIZE CGA_CLUSTER_SIZE CHECK_POINTERS CHUNK_SIZE COLLNET_ENABLE "
    "COLLNET_NODE_THRESHOLD COMM_BLOCKING COMM_ID COMM_SHRINK_SHARE_RESOURCES COMM_SPLIT_SHARE_RESOURCES "
    "CONF_FILE CONNECT_ROUND_MAX_PEERS CREATE_THREAD_CONTEXT CROSS_NIC CTA_POLICY CUMEM_ENABLE "
    "CUMEM_HOST_ENABLE DEBUG DEBUG_FILE DEBUG_SUBSYS DEBUG_TIMESTAMP_FORMAT DEBUG_TIMESTAMP_LEVELS "
    "DMABUF_ENABLE ENV_PLUGIN GDRCOPY_ENABLE GDRCOPY_FIFO_ENABLE GDRCOPY_FLUSH_ENABLE GDRCOPY_SYNC_ENABLE "
    "GDR_FLUSH_DISABLE GIN_COUNTER_POOL_SIZE GIN_ENABLE GIN_ERROR_QUERY_SEC GIN_GDAKI_NIC_HANDLER "
    "GIN_GDAKI_QP_DEPTH GIN_IB_ALLGATHER_TAG GIN_IB_ALLTOALL_TAG GIN_NCONTEXTS GIN_PROXY_QUEUE_SIZE "
    "GIN_SIGNAL_POOL_SIZE GIN_TYPE GRAPH_DUMP_FILE GRAPH_DUMP_FILE_RANK GRAPH_FILE GRAPH_HELPER_DISABLE "
    "GRAPH_MIXING_SUPPORT GRAPH_REGISTER GROUP_CUDA_STREAM HOSTID IB_ADAPTIVE_ROUTING IB_ADDR_FAMILY "
    "IB_ADDR_RANGE IB_AR_THRESHOLD IB_DATA_DIRECT IB_DISABLE IB_ECE_ENABLE IB_FIFO_TC IB_GID_INDEX IB_HCA "
    "IB_MERGE_NICS IB_MERGE_VFS IB_MQP_RETRY_ALL IB_MQP_RETRY_CNT IB_MQP_RETRY_SLEEP_MSEC "
    "IB_PCI_RELAXED_ORDERING IB_PKEY IB_QPS_PER_CONNECTION IB_RETRY_CNT IB_RETURN_ASYNC_EVENTS "
    "IB_ROCE_VERSION_NUM IB_ROUTABLE_FLID_GID_INDEX IB_SL IB_SL_DEFAULT IB_SPLIT_DATA_ON_QPS IB_TC "
    "IB_TC_DEFAULT IB_TIMEOUT IB_USE_INLINE IB_WARN_RAIL_LOCAL IGNORE_CPU_AFFINITY IGNORE_DISABLED_P2P "
    "IPC_COLLECTIVE IPC_SENDRECV L1_SHARED_MEMORY_CARVEOUT LAUNCH_MODE LAUNCH_ORDER_IMPLICIT LAUNCH_RACE_FATAL "
    "LEGACY_CUDA_REGISTER LL128_BUFFSIZE LL128_C2C LL128_NTHREADS LL_BUFFSIZE LOCAL_REGISTER MAX_CTAS "
    "MAX_NCHANNELS MAX_NRINGS MAX_P2P_NCHANNELS MEM_SYNC_DOMAIN MIN_CTAS MIN_NCHANNELS MIN_NRINGS "
    "MIN_P2P_NCHANNELS MNNVL_CLIQUE_ID MNNVL_ENABLE MNNVL_RAIL_PER_HOST MNNVL_SCATTER_NETS_ENABLE MNNVL_UUID "
    "NCHANNELS_PER_NET_PEER NET NETDEVS_POLICY NET_DEVICE_GIN_GDAKI NET_DEVICE_GIN_PROXY NET_DEVICE_HOST "
    "NET_DEVICE_UNPACK NET_DISABLE_INTRA NET_FORCE_FLUSH NET_FORCE_MERGE NET_GDR_C2C NET_GDR_LEVEL NET_GDR_READ "
    "NET_MERGE_LEVEL NET_OPTIONAL_RECV_COMPLETION NET_OVERHEAD NET_PLUGIN NET_PLUGIN_REF_COUNT "
    "NET_SHARED_BUFFERS NET_SHARED_COMMS NSOCKS_PERTHREAD NTHREADS NVB_DISABLE NVB_PRECONNECT "
    "NVLINK_UTIL_CENTRIC_SCHED_ENABLE NVLSTREE_MAX_CHUNKSIZE NVLS_CHUNKSIZE NVLS_ENABLE NVLS_NCHANNELS "
    "NVTX_DISABLE OOB_NET_ENABLE OOB_NET_IFNAME P2P_DIRECT_DISABLE P2P_DISABLE P2P_LEVEL P2P_LL_THRESHOLD "
    "P2P_NET_CHUNKSIZE P2P_NVL_CHUNKSIZE P2P_PCI_CHUNKSIZE P2P_PXN_LEVEL P2P_READ_ENABLE "
    "P2P_SCHEDULE_GROUP_SIZE P2P_USE_CUDA_MEMCPY PAT_ENABLE PROFILER_PLUGIN PROGRESS_APPENDOP_FREQ PROTO "
    "PROXY_APPEND_BATCH_SIZE PROXY_CPUSET PROXY_DUMP_SIGNAL PXN_C2C PXN_DISABLE RAS_ADDR RAS_ENABLE "
    "RAS_TIMEOUT_FACTOR REPORT_CONNECT_PROGRESS RUNTIME_CONNECT SET_CPU_STACK_SIZE SET_STACK_SIZE "
    "SET_THREAD_NAME SHM_DISABLE SHM_LOCALITY SHM_MEMCPY_MODE SHM_USE_CUDA_MEMCPY SINGLE_PROC_MEM_REG_ENABLE "
    "SOCKET_FAMILY SOCKET_IFNAME SOCKET_INLINE SOCKET_MIN_TASKSIZE SOCKET_NTHREADS SOCKET_RCVBUF "
    "SOCKET_RETRY_CNT SOCKET_RETRY_SLEEP_MSEC SOCKET_SNDBUF SYM_CTAS SYM_KERNEL THREAD_THRESHOLDS "
    "TOPO_DUMP_FILE TOPO_DUMP_FILE_RANK TOPO_FILE TUNER_PLUGIN UID_STAGGER_RATE UID_STAGGER_THRESHOLD "
    "UNPACK_DOUBLE_NCHANNELS WARN_ENABLE_DEBUG_INFO WIN_ENABLE WIN_STRIDE WORK_ARGS_BYTES WORK_FIFO_BYTES";

#define NET_KEY_PREFIX "env."

bool dlpar_net_is_key(const char *key)
{
  return strncmp(key, NET_KEY_PREFIX, strlen(NET_KEY_PREFIX)) == 0;
}

/* Whether name (without NCCL_) is a word of NCCL_NAMES. */
static bool nccl_reads(const char *name)
{
  const size_t len = strlen(name);
  for (const char *at = strstr(NCCL_NAMES, name); at; at = strstr(at + 1, name))
    if ((at == NCCL_NAMES || at[-1] == ' ') && (at[len] == ' ' || at[len] == '\0'))
      return true;
  return false;
}

static int smallest(int a, int b, int c)
{
  const int ab = a < b ? a : b;
  return ab < c ? ab : c;
}

/* Levenshtein distance of a and the blen characters of b (99: too long to compare). */
static int distance(const char *a, const char *b, size_t blen)
{
  int row[80];
  const size_t alen = strlen(a);
  if (alen >= 79 || blen >= 79)
    return 99;
  for (size_t j = 0; j <= blen; j++)
    row[j] = (int)j;
  for (size_t i = 1; i <= alen; i++) {
    int diagonal = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= blen; j++) {
      const int above = row[j];
      row[j] = smallest(diagonal + (a[i - 1] != b[j - 1]), above + 1, row[j - 1] + 1);
      diagonal = above;
    }
  }
  return row[blen];
}

/* The NCCL name nearest to name, in out (without the prefix). */
static void nearest_nccl_name(const char *name, char *out, size_t len)
{
  int best = 99;
  for (const char *word = NCCL_NAMES; *word;) {
    const size_t wlen = strcspn(word, " ");
    const int d = distance(name, word, wlen);
    if (d < best) {
      best = d;
      snprintf(out, len, "%.*s", (int)wlen, word);
    }
    word += wlen;
    word += *word == ' ';
  }
}

static int check_variable(const char *key, const char *var, dlpar_error *err)
{
  char nearest[64] = "";
  if (strcmp(var, "GLOO_SOCKET_IFNAME") == 0 || (strncmp(var, "UCX_", 4) == 0 && var[4]))
    return DLPAR_OK;
  if (strncmp(var, "NCCL_", 5) != 0)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s: %s is not a network setting (env. takes "
                           "NCCL_*, UCX_* and GLOO_SOCKET_IFNAME)", dlpar_show(key).text, dlpar_show(var).text);
  if (nccl_reads(var + 5))
    return DLPAR_OK;
  nearest_nccl_name(var + 5, nearest, sizeof(nearest));
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s: NCCL reads no %s (NCCL would ignore it): did you "
                         "mean NCCL_%s?", dlpar_show(key).text, dlpar_show(var).text, nearest);
}

int dlpar_net_add(dlpar_net_config *config, const char *key, const char *value, dlpar_error *err)
{
  dlpar_net_setting *s;
  const char *var = key + strlen(NET_KEY_PREFIX), *at = strchr(var, '@');
  const size_t var_len = at ? (size_t)(at - var) : strlen(var);
  if (config->count == DLPAR_NET_MAX)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s: more than %d env. settings",
                           dlpar_show(key).text, DLPAR_NET_MAX);
  s = &config->setting[config->count];
  if (var_len == 0 || var_len >= sizeof(s->var) || (at && (!at[1] || strlen(at + 1) >= sizeof(s->nodes))) ||
      !*value || strlen(value) >= sizeof(s->value))
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s=%s: expected env.VAR=VALUE or "
                           "env.VAR@NODES=VALUE (e.g. env.NCCL_SOCKET_IFNAME@gpu[01-16]=ib0)",
                           dlpar_show(key).text, dlpar_show(value).text);
  memset(s, 0, sizeof(*s));
  snprintf(s->var, sizeof(s->var), "%.*s", (int)var_len, var);
  snprintf(s->nodes, sizeof(s->nodes), "%s", at ? at + 1 : "");
  snprintf(s->value, sizeof(s->value), "%s", value);
  DLPAR_TRY(check_variable(key, s->var, err));
  if (s->nodes[0])
    DLPAR_TRY(dlpar_hostlist_syntax(key, s->nodes, err));
  config->count++;
  return DLPAR_OK;
}

/* The ranges inside one pair of brackets, "01-16,20" (len characters):
 * NULL when they are numbers and rising ranges, else what is wrong. */
static const char *ranges_wrong(const char *ranges, size_t len, char *why, size_t why_len)
{
  for (size_t at = 0; at <= len;) {
    const size_t range_len = strcspn(ranges + at, ",]");
    const size_t lo_len = strspn(ranges + at, "0123456789");
    const char *dash = ranges + at + lo_len;
    const size_t hi_len = *dash == '-' ? strspn(dash + 1, "0123456789") : 0;
    if (lo_len == 0 || (lo_len != range_len && (*dash != '-' || hi_len == 0 || lo_len + 1 + hi_len != range_len))) {
      snprintf(why, why_len, "the range '%.*s' is not N or LO-HI", (int)(range_len < 40 ? range_len : 40),
               ranges + at);
      return why;
    }
    if (hi_len && strtoul(ranges + at, NULL, 10) > strtoul(dash + 1, NULL, 10)) {
      snprintf(why, why_len, "the range %.*s runs backwards", (int)(range_len < 40 ? range_len : 40), ranges + at);
      return why;
    }
    at += range_len + 1;
  }
  return NULL;
}

/* One element of a host list, "rack[1-2]-n[01-16]" (len characters):
 * NULL when Slurm's grammar holds, else what is wrong. */
static const char *element_wrong(const char *element, size_t len, char *why, size_t why_len)
{
  if (len == 0)
    return "an empty name between commas";
  for (size_t at = 0; at < len; at++) {
    const char c = element[at];
    const char *close;
    if (c == ']')
      return "a ']' without its '['";
    if (c != '[') {
      if (!isalnum((unsigned char)c) && c != '-' && c != '_' && c != '.') {
        snprintf(why, why_len, "'%c' is no host name character", isprint((unsigned char)c) ? c : '?');
        return why;
      }
      continue;
    }
    close = memchr(element + at + 1, ']', len - at - 1);
    if (!close || memchr(element + at + 1, '[', (size_t)(close - element - at - 1)))
      return "a '[' without its ']'";
    if (ranges_wrong(element + at + 1, (size_t)(close - element - at - 1), why, why_len))
      return why;
    at = (size_t)(close - element);
  }
  return NULL;
}

int dlpar_hostlist_syntax(const char *key, const char *list, dlpar_error *err)
{
  char why[96];
  for (const char *element = list;;) {
    size_t len = 0;
    const char *wrong;
    for (bool inside = false; element[len] && (element[len] != ',' || inside); len++)
      inside = element[len] == '[' ? true : element[len] == ']' ? false : inside;
    if ((wrong = element_wrong(element, len, why, sizeof(why))))
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s: the host list %s is malformed (%s): write it "
                             "as Slurm does, e.g. gpu[01-16],rack[1-2]-n[1-8],login1", dlpar_show(key).text,
                             dlpar_show(list).text, wrong);
    if (!element[len])
      return DLPAR_OK;
    element += len + 1;
  }
}

const dlpar_net_setting *dlpar_net_find(const dlpar_net_config *node_settings, const char *var)
{
  for (int i = 0; i < node_settings->count; i++)
    if (strcmp(node_settings->setting[i].var, var) == 0)
      return &node_settings->setting[i];
  return NULL;
}

int dlpar_net_for_node(const dlpar_net_config *config, const char *node, dlpar_hostlist_has_fn has,
                       dlpar_net_config *out, dlpar_error *err)
{
  memset(out, 0, sizeof(*out));
  for (int i = 0; i < config->count; i++) {
    const dlpar_net_setting *s = &config->setting[i];
    dlpar_net_setting *held;
    bool in_class = true;
    if (s->nodes[0] && has(s->nodes, node, &in_class) != DLPAR_OK)
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: env.%s@%s: Slurm's host list parser refuses %s "
                             "(slurmd's log says why): write it as Slurm does, e.g. gpu[01-16],login1", s->var,
                             dlpar_show(s->nodes).text, dlpar_show(s->nodes).text);
    if (!in_class)
      continue;
    held = (dlpar_net_setting *)dlpar_net_find(out, s->var);
    if (held && held->nodes[0] && s->nodes[0])
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s is in two classes of %s (%s and %s): "
                             "make them disjoint", node, s->var, held->nodes, s->nodes);
    if (!held)
      out->setting[out->count++] = *s;
    else if (s->nodes[0])
      *held = *s; /* the class's over every node's */
  }
  return DLPAR_OK;
}

/* Whether an interface of this node matches one entry of an NCCL-style
 * list (prefixes, =exact; a list starting with ^ excludes: nothing to
 * find), or, exact, every entry of a Gloo list. */
static bool interfaces_found(const struct ifaddrs *all, const char *list, bool nccl_style)
{
  bool any = false, every = true;
  if (nccl_style && list[0] == '^')
    return true;
  for (const char *entry = list; *entry;) {
    const size_t len = strcspn(entry, ",");
    const bool exact = !nccl_style || entry[0] == '=';
    const char *name = entry + (nccl_style && entry[0] == '=');
    const size_t name_len = len - (size_t)(name - entry);
    bool found = false;
    for (const struct ifaddrs *i = all; i && !found; i = i->ifa_next)
      found = strncmp(i->ifa_name, name, name_len) == 0 && (!exact || i->ifa_name[name_len] == '\0');
    any |= found;
    every &= found;
    entry += len + (entry[len] == ',');
  }
  return nccl_style ? any : every;
}

int dlpar_net_check_interfaces(const dlpar_net_config *node_settings, const char *node, dlpar_error *err)
{
  static const struct {
    const char *var;
    bool nccl_style;
  } named[] = {{"NCCL_SOCKET_IFNAME", true}, {"NCCL_OOB_NET_IFNAME", true}, {"GLOO_SOCKET_IFNAME", false}};
  struct ifaddrs *all = NULL;
  int rc = DLPAR_OK;
  if (getifaddrs(&all) != 0)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "getifaddrs on %s failed: cannot check plugstack.conf's "
                           "interfaces", node);
  for (size_t k = 0; k < sizeof(named) / sizeof(named[0]) && rc == DLPAR_OK; k++) {
    const dlpar_net_setting *s = dlpar_net_find(node_settings, named[k].var);
    if (s && !interfaces_found(all, s->value, named[k].nccl_style))
      rc = dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: env.%s%s%s=%s: %s has no such interface "
                           "(`ip link` on it lists them): fix the line or the node", s->var, s->nodes[0] ? "@" : "",
                           s->nodes, dlpar_show(s->value).text, node);
  }
  freeifaddrs(all);
  return rc;
}
