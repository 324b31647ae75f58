/* SPDX-License-Identifier: BSD-3-Clause */
/* spank/admin.c: the admin's plugstack.conf settings (see admin.h). */
#include "config.h"

#include "spank/admin.h"

#include <stdio.h>
#include <string.h>

#include "common/status.h"
#include "common/text.h"

static int parse_bool(const char *key, const char *value, bool *out, char *err, size_t errlen)
{
  if (strcmp(value, "yes") == 0 || strcmp(value, "1") == 0 || strcmp(value, "true") == 0) {
    *out = true;
    return DLPAR_OK;
  }
  if (strcmp(value, "no") == 0 || strcmp(value, "0") == 0 || strcmp(value, "false") == 0) {
    *out = false;
    return DLPAR_OK;
  }
  snprintf(err, errlen, "plugstack.conf: %s=%s: expected yes or no", key, dlpar_show(value).text);
  return DLPAR_ERR_INPUT;
}

static int parse_path(const char *key, const char *value, char *out, size_t len, char *err,
                      size_t errlen)
{
  if (value[0] != '/' || strlen(value) >= len) {
    snprintf(err, errlen, "plugstack.conf: %s=%s: expected an absolute path", key, dlpar_show(value).text);
    return DLPAR_ERR_INPUT;
  }
  snprintf(out, len, "%s", value);
  return DLPAR_OK;
}

static int parse_pair(const char *key, const char *value, dlpar_admin_config *config, char *err,
                      size_t errlen)
{
  if (strcmp(key, "tp_span") == 0) {
    if (dlpar_span_policy_parse(value, &config->tp_span) == DLPAR_OK)
      return DLPAR_OK;
    snprintf(err, errlen, "plugstack.conf: tp_span=%s: expected error, warn or allow", dlpar_show(value).text);
    return DLPAR_ERR_INPUT;
  }
  if (strcmp(key, "topology_xml") == 0)
    return parse_path(key, value, config->topology_xml, sizeof(config->topology_xml), err, errlen);
  if (strcmp(key, "profile_dir") == 0)
    return parse_path(key, value, config->profile_dir, sizeof(config->profile_dir), err, errlen);
  if (strcmp(key, "bind_cpus") == 0)
    return parse_bool(key, value, &config->bind_cpus, err, errlen);
  if (strcmp(key, "bind_nic") == 0)
    return parse_bool(key, value, &config->bind_nic, err, errlen);
  if (strcmp(key, "torch_ports") == 0)
    return dlpar_port_range_parse(key, value, &config->torch_port_lo, &config->torch_port_hi, err, errlen);
  snprintf(err, errlen, "plugstack.conf: unknown key '%s' (known: tp_span, topology_xml, "
           "profile_dir, bind_cpus, bind_nic, torch_ports)", dlpar_show(key).text);
  return DLPAR_ERR_INPUT;
}

int dlpar_admin_config_parse(int argc, char **argv, dlpar_admin_config *config, char *err,
                             size_t errlen)
{
  memset(config, 0, sizeof(*config));
  config->tp_span = DLPAR_SPAN_ERROR;
  config->bind_cpus = true;
  config->bind_nic = true;
  dlpar_port_range_parse("torch_ports", DLPAR_TORCH_PORTS_DEFAULT, &config->torch_port_lo, &config->torch_port_hi, err,
                         errlen);
  for (int i = 0; i < argc; i++) {
    char key[64];
    const char *eq = strchr(argv[i], '=');
    if (!eq || eq == argv[i] || (size_t)(eq - argv[i]) >= sizeof(key)) {
      snprintf(err, errlen, "plugstack.conf: '%s' is not key=value (e.g. tp_span=warn)", dlpar_show(argv[i]).text);
      return DLPAR_ERR_INPUT;
    }
    snprintf(key, sizeof(key), "%.*s", (int)(eq - argv[i]), argv[i]);
    if (parse_pair(key, eq + 1, config, err, errlen) != DLPAR_OK)
      return DLPAR_ERR_INPUT;
  }
  return DLPAR_OK;
}
