/* SPDX-License-Identifier: BSD-3-Clause */
/* tests/lib/nvtx_record.c: an NVTX tool, loaded by any NVTX-instrumented
 * program through NVTX_INJECTION64_PATH (the way Nsight Systems attaches),
 * that appends one line per range event to the file $DLPAR_NVTX_RECORD:
 * "push NAME", "pop", "start NAME", "end". The tests' view of dlpar's NVTX
 * ranges and of its profiled-steps window on machines without nsys. */
#define NVTX_NO_IMPL
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nvtx3/nvToolsExt.h>

int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table);

static void record(const char *event, const char *name)
{
  const char *path = getenv("DLPAR_NVTX_RECORD");
  char line[512];
  int len, fd;
  if (!path)
    return;
  len = snprintf(line, sizeof(line), "%s%s%s\n", event, name ? " " : "", name ? name : "");
  fd = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd < 0)
    return;
  if (write(fd, line, (size_t)len) != len)
    perror("nvtx_record");
  close(fd);
}

static int push_a(const char *name)
{
  record("push", name);
  return 0;
}

static int pop(void)
{
  record("pop", NULL);
  return 0;
}

static nvtxRangeId_t start_a(const char *name)
{
  record("start", name);
  return 1;
}

static void end(nvtxRangeId_t id)
{
  (void)id;
  record("end", NULL);
}

/* NVTX calls this once, at the program's first NVTX call; a non-zero
 * return keeps the tool (0 unloads it). */
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
  const NvtxExportTableCallbacks *callbacks = get_export_table(NVTX_ETID_CALLBACKS);
  NvtxFunctionTable core;
  unsigned int size;
  if (!callbacks || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &size) ||
      size <= NVTX_CBID_CORE_RangePop)
    return 0;
  *core[NVTX_CBID_CORE_RangePushA] = (NvtxFunctionPointer)push_a;
  *core[NVTX_CBID_CORE_RangePop] = (NvtxFunctionPointer)pop;
  *core[NVTX_CBID_CORE_RangeStartA] = (NvtxFunctionPointer)start_a;
  *core[NVTX_CBID_CORE_RangeEnd] = (NvtxFunctionPointer)end;
  return 1;
}
