/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/admin.c: the admin's plugstack.conf settings (see admin.h). */
#include "config.h"

#include "spank/admin.h"

#include <stdio.h>
#include <string.h>

#include "common/status.h"
#include "common/text.h"
#include "spank/hostlist.h"

/* yes or no, as the docs and the error say: nothing else (true, 1, on...) */
static int parse_bool(const char *key, const char *value, bool *out, dlpar_error *err)
{
  if (strcmp(value, "yes") == 0 || strcmp(value, "no") == 0) {
    *out = strcmp(value, "yes") == 0;
    return DLPAR_OK;
  }
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s=%s: expected yes or no", key,
                         dlpar_show(value).text);
}

static int parse_path(const char *key, const char *value, char *out, size_t len, dlpar_error *err)
{
  if (value[0] != '/' || strlen(value) >= len)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s=%s: expected an absolute path", key,
                           dlpar_show(value).text);
  snprintf(out, len, "%s", value);
  return DLPAR_OK;
}

/* An env. key: its class, where it has one, as Slurm's own host-list
 * parser takes it (a list Slurm refuses, "n[1-2000000000]" among them, would
 * match no node on any node). */
static int add_network_setting(dlpar_admin_config *config, const char *key, const char *value, dlpar_error *err)
{
  const dlpar_net_setting *added = &config->net.setting[config->net.count];
  bool unused;
  DLPAR_TRY(dlpar_net_add(&config->net, key, value, err));
  if (added->nodes[0] && dlpar_slurm_hostlist_has(added->nodes, "", &unused) != DLPAR_OK)
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s: Slurm's host list parser refuses %s: write it "
                           "as Slurm does, e.g. gpu[01-16],rack[1-2]-n[1-8],login1", dlpar_show(key).text,
                           dlpar_show(added->nodes).text);
  return DLPAR_OK;
}

static int parse_pair(const char *key, const char *value, dlpar_admin_config *config, dlpar_error *err)
{
  if (strcmp(key, "tp_span") == 0) {
    if (dlpar_span_policy_parse(value, &config->tp_span) == DLPAR_OK)
      return DLPAR_OK;
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: tp_span=%s: expected error, warn or allow",
                           dlpar_show(value).text);
  }
  if (strcmp(key, "topology_xml") == 0)
    return parse_path(key, value, config->topology_xml, sizeof(config->topology_xml), err);
  if (strcmp(key, "profile_dir") == 0)
    return parse_path(key, value, config->profile_dir, sizeof(config->profile_dir), err);
  if (strcmp(key, "bind_cpus") == 0)
    return parse_bool(key, value, &config->bind_cpus, err);
  if (strcmp(key, "bind_nic") == 0)
    return parse_bool(key, value, &config->bind_nic, err);
  if (strcmp(key, "torch_ports") == 0)
    return dlpar_port_range_parse(key, value, &config->torch_port_lo, &config->torch_port_hi, err);
  if (dlpar_net_is_key(key))
    return add_network_setting(config, key, value, err);
  return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: unknown key '%s' (known: tp_span, topology_xml, "
                         "profile_dir, bind_cpus, bind_nic, torch_ports, env.VAR[@NODES])", dlpar_show(key).text);
}

/* A key given twice is refused: which one the admin meant is not ours to guess. */
static bool given_before(const char *key, int i, char **argv, dlpar_error *err)
{
  const size_t len = strlen(key);
  for (int j = 0; j < i; j++) {
    if (strncmp(argv[j], key, len) == 0 && argv[j][len] == '=') {
      dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: %s given twice (%s, then %s): keep one",
                      dlpar_show(key).text, dlpar_show(argv[j]).text, dlpar_show(argv[i]).text);
      return true;
    }
  }
  return false;
}

int dlpar_admin_config_parse(int argc, char **argv, dlpar_admin_config *config, dlpar_error *err)
{
  bool ports_given = false;
  int ephemeral_lo, ephemeral_hi;
  memset(config, 0, sizeof(*config));
  config->tp_span = DLPAR_SPAN_ERROR;
  config->bind_cpus = true;
  config->bind_nic = true;
  dlpar_port_range_parse("torch_ports", DLPAR_TORCH_PORTS_DEFAULT, &config->torch_port_lo, &config->torch_port_hi, err);
  for (int i = 0; i < argc; i++) {
    char key[320];
    const char *eq = strchr(argv[i], '=');
    if (!eq || eq == argv[i] || (size_t)(eq - argv[i]) >= sizeof(key))
      return dlpar_error_set(err, DLPAR_ERR_INPUT, "plugstack.conf: '%s' is not key=value (e.g. tp_span=warn)",
                             dlpar_show(argv[i]).text);
    snprintf(key, sizeof(key), "%.*s", (int)(eq - argv[i]), argv[i]);
    if (given_before(key, i, argv, err) || parse_pair(key, eq + 1, config, err) != DLPAR_OK)
      return DLPAR_ERR_INPUT;
    ports_given |= strcmp(key, "torch_ports") == 0;
  }
  /* derived ports where outgoing connections take theirs would be busy at
   * random (a node that does not say its range is not checked) */
  if (dlpar_ephemeral_ports(&ephemeral_lo, &ephemeral_hi) != DLPAR_OK)
    return DLPAR_OK;
  return dlpar_port_range_outside("torch_ports", config->torch_port_lo, config->torch_port_hi, ephemeral_lo,
                                  ephemeral_hi, ports_given, err);
}
