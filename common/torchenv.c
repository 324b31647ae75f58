/* SPDX-License-Identifier: BSD-3-Clause */
/* common/torchenv.c: ports, addresses and interfaces for the PyTorch
 * env:// contract (see torchenv.h). */
#include "config.h"

#include "torchenv.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "status.h"
#include "text.h"

const char *const dlpar_torch_names[] = {"RANK",       "LOCAL_RANK",  "WORLD_SIZE",  "LOCAL_WORLD_SIZE",
                                         "GROUP_RANK", "NODE_RANK",   "MASTER_ADDR", "MASTER_PORT",
                                         "GLOO_SOCKET_IFNAME", NULL};

int dlpar_env_mode_parse(const char *text, bool *torch, dlpar_error *err)
{
  if (!text || strcmp(text, "torch") == 0)
    *torch = true;
  else if (strcmp(text, "none") == 0)
    *torch = false;
  else {
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "--dl-env=%s: expected torch (export MASTER_ADDR, MASTER_PORT, "
                           "RANK... for env://) or none", dlpar_show(text).text);
  }
  return DLPAR_OK;
}

bool dlpar_env_is_torch_name(const char *name)
{
  for (int i = 0; dlpar_torch_names[i]; i++) {
    if (strcmp(dlpar_torch_names[i], name) == 0)
      return true;
  }
  return false;
}

size_t dlpar_torch_names_set(char *out, size_t len)
{
  char all[16 * (DLPAR_SHOWN_LEN + 32)]; /* every name with its shown value */
  size_t used = 0;
  for (int i = 0; dlpar_torch_names[i] && used < sizeof(all); i++) {
    const char *value = getenv(dlpar_torch_names[i]);
    if (value)
      used += (size_t)snprintf(all + used, sizeof(all) - used, "%s%s=%s", used ? ", " : "", dlpar_torch_names[i],
                               dlpar_show(value).text);
  }
  if (!used) {
    if (len)
      out[0] = '\0';
    return 0;
  }
  dlpar_quote(all, out, len); /* cut where out is full, at a character, with "..." */
  return strlen(out);
}

int dlpar_port_range_parse(const char *key, const char *text, int *lo, int *hi, dlpar_error *err)
{
  const char *dash = strchr(text, '-');
  long first, last;
  if (!dash || dlpar_parse_uint(text, (size_t)(dash - text), 65535, &first) != 0 ||
      dlpar_parse_uint(dash + 1, strlen(dash + 1), 65535, &last) != 0 || first < 1024 || first > last) {
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s=%s: expected a port range LO-HI within 1024-65535 "
                           "(e.g. %s=%s)", key, dlpar_show(text).text, key, DLPAR_TORCH_PORTS_DEFAULT);
  }
  *lo = (int)first;
  *hi = (int)last;
  return DLPAR_OK;
}

int dlpar_ephemeral_ports(int *lo, int *hi)
{
  FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
  const int rc = f && fscanf(f, "%d %d", lo, hi) == 2 ? DLPAR_OK : DLPAR_ERR_SYSTEM;
  if (f)
    fclose(f);
  return rc;
}

int dlpar_port_range_outside(const char *key, int lo, int hi, int ephemeral_lo, int ephemeral_hi, bool given,
                             dlpar_error *err)
{
  if (hi < ephemeral_lo || lo > ephemeral_hi)
    return DLPAR_OK;
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s=%d-%d%s overlaps the kernel's ephemeral ports %d-%d "
                         "(net.ipv4.ip_local_port_range), which any outgoing connection may take: set %s=LO-HI outside "
                         "them (LO at least 1024)", key, lo, hi, given ? "" : " (the default)", ephemeral_lo,
                         ephemeral_hi, key);
}

int dlpar_resv_ports_first(const char *text)
{
  long port;
  const size_t len = text ? strspn(text, "0123456789") : 0;
  if (len == 0 || (text[len] && text[len] != '-' && text[len] != ',') ||
      dlpar_parse_uint(text, len, 65535, &port) != 0 || port == 0)
    return 0;
  return (int)port;
}

/* splitmix64's finalizer: every bit of the job id moves every bit of the
 * result, so consecutive job ids land anywhere in the range. */
static uint64_t mix64(uint64_t x)
{
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

int dlpar_torch_port_derive(uint32_t job, uint32_t step, int lo, int hi)
{
  const uint64_t span = (uint64_t)(hi - lo + 1);
  return lo + (int)((mix64(job) % span + step) % span);
}

/* A TCP listener on port on every address of the family, with SO_REUSEADDR
 * as torch's TCPStore binds: IPv4's 0.0.0.0, or IPv6's [::] with
 * IPV6_V6ONLY off, which takes every IPv4 address too (so a listener of
 * either family on the port, on any address, conflicts with it); -1 and
 * errno when it cannot (EAFNOSUPPORT: no IPv6 on this host). */
static int listen_any(int family, int port)
{
  union {
    struct sockaddr any;
    struct sockaddr_in v4;
    struct sockaddr_in6 v6;
  } where;
  const socklen_t len = family == AF_INET ? sizeof(where.v4) : sizeof(where.v6);
  const int one = 1, off = 0, fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int saved;
  memset(&where, 0, sizeof(where));
  if (family == AF_INET) {
    where.v4.sin_family = AF_INET;
    where.v4.sin_port = htons((uint16_t)port);
    where.v4.sin_addr.s_addr = htonl(INADDR_ANY);
  } else {
    where.v6.sin6_family = AF_INET6;
    where.v6.sin6_port = htons((uint16_t)port);
    where.v6.sin6_addr = in6addr_any;
  }
  if (fd < 0)
    return -1;
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
      (family == AF_INET || setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) == 0) &&
      bind(fd, &where.any, len) == 0 && listen(fd, 1) == 0)
    return fd;
  saved = errno;
  close(fd);
  errno = saved;
  return -1;
}

bool dlpar_port_free(int port)
{
  int fd = listen_any(AF_INET, port);
  if (fd < 0)
    return false;
  close(fd);
  if ((fd = listen_any(AF_INET6, port)) < 0)
    return errno == EAFNOSUPPORT; /* no IPv6 here: IPv4's answer stands */
  close(fd);
  return true;
}

/* One row of a /proc/net/tcp table into *holder (dlpar_port_listener_parse
 * says how): true once another user's listener is found (the answer). The
 * header and anything else that is not a socket's row change nothing. */
static bool listener_row(const char *row, int port, long user, long *holder)
{
  enum { TCP_LISTEN = 0x0A }; /* the kernel's TCP_LISTEN, as /proc/net/tcp shows it */
  unsigned row_port, state;
  unsigned long uid;
  if (sscanf(row, " %*[0-9]: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x %*x:%*x %*x:%*x %*x %lu", &row_port, &state,
             &uid) != 3 ||
      state != TCP_LISTEN || row_port != (unsigned)port)
    return false;
  *holder = (long)uid;
  return (long)uid != user;
}

int dlpar_port_listener_parse(const char *table, int port, long user, long *holder)
{
  *holder = -1;
  if (!table)
    return DLPAR_ERR_INPUT;
  for (const char *row = table; row && *row; row = strchr(row, '\n') ? strchr(row, '\n') + 1 : NULL)
    if (listener_row(row, port, user, holder))
      break;
  return DLPAR_OK;
}

int dlpar_port_listener(int port, long user, long *holder)
{
  const char *const tables[] = {"/proc/net/tcp", "/proc/net/tcp6"};
  char *row = NULL;
  size_t size = 0;
  bool read_any = false, foreign = false;
  *holder = -1;
  for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]) && !foreign; i++) {
    FILE *table = fopen(tables[i], "re");
    if (!table)
      continue;
    read_any = true;
    while (!foreign && getline(&row, &size, table) > 0)
      foreign = listener_row(row, port, user, holder);
    fclose(table);
  }
  free(row);
  return read_any ? DLPAR_OK : DLPAR_ERR_SYSTEM;
}

int dlpar_port_pick(void)
{
  struct sockaddr_storage bound;
  socklen_t len = sizeof(bound);
  int fd = listen_any(AF_INET6, 0), port = 0; /* dual-stack: free for both families */
  if (fd < 0 && errno == EAFNOSUPPORT)
    fd = listen_any(AF_INET, 0);
  if (fd < 0)
    return 0;
  if (getsockname(fd, (struct sockaddr *)&bound, &len) == 0)
    port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                             : ((struct sockaddr_in *)&bound)->sin_port);
  close(fd);
  return port;
}

bool dlpar_is_loopback(const char *addr)
{
  struct in_addr v4;
  struct in6_addr v6;
  if (inet_pton(AF_INET, addr, &v4) == 1)
    return ntohl(v4.s_addr) >> 24 == 127;
  return inet_pton(AF_INET6, addr, &v6) == 1 &&
         (IN6_IS_ADDR_LOOPBACK(&v6) || (IN6_IS_ADDR_V4MAPPED(&v6) && v6.s6_addr[12] == 127));
}

/* The local address the kernel would use to reach addr (a UDP "connect"
 * sends nothing). */
static int source_address(const char *addr, struct sockaddr_storage *local)
{
  struct addrinfo hints = {.ai_socktype = SOCK_DGRAM, .ai_flags = AI_NUMERICHOST}, *found = NULL;
  socklen_t len = sizeof(*local);
  int fd = -1, rc = DLPAR_ERR_SYSTEM;
  if (getaddrinfo(addr, "9", &hints, &found) != 0)
    return DLPAR_ERR_SYSTEM;
  if ((fd = socket(found->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0 &&
      connect(fd, found->ai_addr, found->ai_addrlen) == 0 && getsockname(fd, (struct sockaddr *)local, &len) == 0)
    rc = DLPAR_OK;
  if (fd >= 0)
    close(fd);
  freeaddrinfo(found);
  return rc;
}

static bool same_address(const struct sockaddr *a, const struct sockaddr_storage *b)
{
  if (!a || a->sa_family != b->ss_family)
    return false;
  if (a->sa_family == AF_INET)
    return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
  return a->sa_family == AF_INET6 &&
         memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
                sizeof(struct in6_addr)) == 0;
}

DLPAR_API int dlpar_route_interface(const char *addr, char *ifname, size_t len)
{
  struct sockaddr_storage local;
  struct ifaddrs *all = NULL;
  bool loopback_wanted;
  int rc = DLPAR_ERR_SYSTEM;
  if (!addr || !ifname || len == 0)
    return DLPAR_ERR_INPUT;
  loopback_wanted = dlpar_is_loopback(addr);
  if (source_address(addr, &local) != DLPAR_OK || getifaddrs(&all) != 0)
    return DLPAR_ERR_SYSTEM;
  for (const struct ifaddrs *ifa = all; ifa; ifa = ifa->ifa_next) {
    if (same_address(ifa->ifa_addr, &local) && (loopback_wanted || !(ifa->ifa_flags & IFF_LOOPBACK))) {
      snprintf(ifname, len, "%s", ifa->ifa_name);
      rc = DLPAR_OK;
      break;
    }
  }
  freeifaddrs(all);
  return rc;
}

int dlpar_numeric_address(const char *host, char *out, size_t len)
{
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *found = NULL;
  const struct addrinfo *pick = NULL;
  if (getaddrinfo(host, NULL, &hints, &found) != 0)
    return DLPAR_ERR_SYSTEM;
  for (const struct addrinfo *a = found; a && !pick; a = a->ai_next)
    pick = a->ai_family == AF_INET ? a : NULL;
  if (!pick)
    pick = found;
  if (getnameinfo(pick->ai_addr, pick->ai_addrlen, out, (socklen_t)len, NULL, 0, NI_NUMERICHOST) != 0) {
    freeaddrinfo(found);
    return DLPAR_ERR_SYSTEM;
  }
  freeaddrinfo(found);
  return DLPAR_OK;
}
