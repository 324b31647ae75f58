/* SPDX-License-Identifier: BSD-3-Clause */
/* common/topo.c: GPU topology from hwloc and the task mapping (see
 * topo.h); what the plugin and libdlpar both use. */
#include "config.h"

#include "topo.h"

#include <hwloc.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "status.h"
#include "text.h"

static int is_nvidia_gpu(hwloc_obj_t obj)
{
  const unsigned cls = obj->attr->pcidev.class_id;
  return obj->attr->pcidev.vendor_id == 0x10de && (cls == 0x0300 || cls == 0x0302);
}

/* Depth of obj counted from the root, for I/O objects too. */
static int tree_depth(hwloc_obj_t obj)
{
  int depth = 0;
  for (; obj->parent; obj = obj->parent)
    depth++;
  return depth;
}

static hwloc_obj_t common_ancestor(hwloc_obj_t a, hwloc_obj_t b)
{
  int da = tree_depth(a), db = tree_depth(b);
  for (; da > db; da--)
    a = a->parent;
  for (; db > da; db--)
    b = b->parent;
  while (a != b) {
    a = a->parent;
    b = b->parent;
  }
  return a;
}

static const char *hca_name(hwloc_obj_t pcidev)
{
  for (hwloc_obj_t child = pcidev->io_first_child; child; child = child->next_sibling) {
    if (child->type == HWLOC_OBJ_OS_DEVICE && child->attr->osdev.type == HWLOC_OBJ_OSDEV_OPENFABRICS)
      return child->name;
  }
  return NULL;
}

/* The HCA sharing the deepest ancestor with the GPU (ties: lower bus). */
static void closest_hca(hwloc_topology_t topology, hwloc_obj_t gpu, char *out, size_t len)
{
  int best_depth = -1;
  out[0] = '\0';
  for (hwloc_obj_t dev = NULL; (dev = hwloc_get_next_pcidev(topology, dev));) {
    const char *name = hca_name(dev);
    int depth;
    if (!name)
      continue;
    depth = tree_depth(common_ancestor(gpu, dev));
    if (depth > best_depth) {
      best_depth = depth;
      snprintf(out, len, "%s", name);
    }
  }
}

/* Every HCA of the node, in hwloc's (PCI bus) order, comma-separated. */
static void list_hcas(hwloc_topology_t topology, char *out, size_t len)
{
  size_t used = 0;
  out[0] = '\0';
  for (hwloc_obj_t dev = NULL; (dev = hwloc_get_next_pcidev(topology, dev)) && used < len;) {
    const char *name = hca_name(dev);
    if (name)
      used += (size_t)snprintf(out + used, len - used, "%s%s", used ? "," : "", name);
  }
}

/* The PCI bridge right above the GPU's switch: groups GPUs behind one switch. */
static unsigned long switch_id(hwloc_obj_t gpu)
{
  hwloc_obj_t parent = gpu->parent;
  return parent && parent->type == HWLOC_OBJ_BRIDGE ? (unsigned long)parent->gp_index : 0;
}

static void describe_gpu(hwloc_topology_t topology, hwloc_obj_t dev, dlpar_gpu *gpu)
{
  const struct hwloc_pcidev_attr_s *pci = &dev->attr->pcidev;
  hwloc_obj_t local = hwloc_get_non_io_ancestor_obj(topology, dev);
  hwloc_obj_t package = hwloc_get_ancestor_obj_by_type(topology, HWLOC_OBJ_PACKAGE, local);
  int numa = local && local->nodeset ? hwloc_bitmap_first(local->nodeset) : -1;
  if (local && local->type == HWLOC_OBJ_PACKAGE)
    package = local;
  snprintf(gpu->busid, sizeof(gpu->busid), "%04x:%02x:%02x.%x", pci->domain, pci->bus, pci->dev,
           pci->func);
  gpu->package = package ? (int)package->os_index : -1;
  gpu->numa = numa;
  gpu->locality[0] = (unsigned long)(gpu->package + 1);
  gpu->locality[1] = (unsigned long)(numa + 1);
  gpu->locality[2] = switch_id(dev);
  gpu->locality[3] = ((unsigned long)pci->domain << 16) | ((unsigned long)pci->bus << 8) |
                     ((unsigned long)pci->dev << 3) | pci->func;
  if (local && local->cpuset)
    hwloc_bitmap_list_snprintf(gpu->cpus, sizeof(gpu->cpus), local->cpuset);
  else
    gpu->cpus[0] = '\0';
  closest_hca(topology, dev, gpu->nic, sizeof(gpu->nic));
}

static int by_bus(const void *a, const void *b)
{
  const dlpar_gpu *x = a, *y = b;
  return x->locality[3] < y->locality[3] ? -1 : x->locality[3] > y->locality[3];
}

/* This machine's topology (xml_path NULL) or the XML's, with its I/O devices. */
int dlpar_hwloc_load(const char *xml_path, hwloc_topology_t *topology, dlpar_error *err)
{
  if (hwloc_topology_init(topology) != 0)
    return dlpar_error_set(err, DLPAR_ERR_SYSTEM, "hwloc: cannot initialise a topology");
  hwloc_topology_set_io_types_filter(*topology, HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
  if (xml_path && hwloc_topology_set_xml(*topology, xml_path) != 0) {
    hwloc_topology_destroy(*topology);
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "topology %s: not a readable hwloc XML file (check the topology_xml "
                           "key)", dlpar_show(xml_path).text);
  }
  if (hwloc_topology_load(*topology) != 0) {
    hwloc_topology_destroy(*topology);
    return dlpar_error_set(err, DLPAR_ERR_INPUT, "hwloc: cannot load the topology%s%s", xml_path ? " from " : "",
                           xml_path ? dlpar_show(xml_path).text : "");
  }
  return DLPAR_OK;
}

int dlpar_topology_load(const char *xml_path, dlpar_topology *topo, dlpar_error *err)
{
  hwloc_topology_t topology;
  memset(topo, 0, sizeof(*topo));
  DLPAR_TRY(dlpar_hwloc_load(xml_path, &topology, err));
  hwloc_bitmap_list_snprintf(topo->all_cpus, sizeof(topo->all_cpus),
                             hwloc_topology_get_topology_cpuset(topology));
  for (hwloc_obj_t dev = NULL; (dev = hwloc_get_next_pcidev(topology, dev));) {
    if (!is_nvidia_gpu(dev) || topo->ngpus == DLPAR_MAX_GPUS)
      continue;
    describe_gpu(topology, dev, &topo->gpu[topo->ngpus++]);
  }
  qsort(topo->gpu, (size_t)topo->ngpus, sizeof(topo->gpu[0]), by_bus);
  list_hcas(topology, topo->all_nics, sizeof(topo->all_nics));
  hwloc_topology_destroy(topology);
  return DLPAR_OK;
}

static int by_locality(const void *a, const void *b, void *topology)
{
  const dlpar_topology *topo = topology;
  const int x = *(const int *)a, y = *(const int *)b;
  const unsigned long *kx = topo->gpu[x].locality, *ky = topo->gpu[y].locality;
  for (int i = 0; i < 4; i++) {
    if (kx[i] != ky[i])
      return kx[i] < ky[i] ? -1 : 1;
  }
  return 0;
}

static void join_ids(const int *ids, int n, char *out, size_t len)
{
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < n && used < len; i++)
    used += (size_t)snprintf(out + used, len - used, "%s%d", i ? "," : "", ids[i]);
}

int dlpar_map_task(const dlpar_topology *topo, const int *step_gpus, int nstep_gpus,
                   int local_rank, int local_size, dlpar_binding *out, dlpar_error *err)
{
  int ordered[DLPAR_MAX_GPUS], n = 0;
  memset(out, 0, sizeof(*out));
  out->gpu = out->device = -1;
  snprintf(out->node_nics, sizeof(out->node_nics), "%s", topo->all_nics);
  if (step_gpus && nstep_gpus > 0) {
    for (int i = 0; i < nstep_gpus && n < DLPAR_MAX_GPUS; i++) {
      if (step_gpus[i] < 0 || step_gpus[i] >= topo->ngpus)
        return dlpar_error_set(err, DLPAR_ERR_INPUT,
                               "GPU %d of the step is not in the node's topology (%d %s found; check the "
                               "topology_xml key or gres.conf)",
                               step_gpus[i], topo->ngpus, dlpar_plural(topo->ngpus, "GPU", "GPUs"));
      ordered[n++] = step_gpus[i];
    }
  } else {
    for (; n < topo->ngpus; n++)
      ordered[n] = n;
  }
  if (n == 0) /* a CPU-only node: no GPU, no binding */
    return DLPAR_OK;
  /* CUDA_VISIBLE_DEVICES in the order the binding assumes: cuda:LOCAL_RANK
   * is the GPU whose CPUs and NIC the task gets (bus order would make it
   * another GPU's where the two orders differ) */
  qsort_r(ordered, (size_t)n, sizeof(int), by_locality, (void *)topo);
  out->device = local_rank % n;
  out->gpu = ordered[out->device];
  join_ids(ordered, n, out->visible, sizeof(out->visible));
  snprintf(out->cpus, sizeof(out->cpus), "%s", topo->gpu[out->gpu].cpus);
  snprintf(out->nic, sizeof(out->nic), "%s", topo->gpu[out->gpu].nic);
  if (local_size > n)
    return dlpar_error_set(err, DLPAR_WARN, "%d tasks share %d GPUs on this node: GPU %d is shared (request one GPU "
                           "per task, e.g. --gpus-per-node=%d)", local_size, n, out->gpu, local_size);
  return DLPAR_OK;
}

int dlpar_parse_id_list(const char *text, int *ids, int max_ids)
{
  int n = 0;
  for (const char *p = text; p && *p;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    long id;
    if (n == max_ids || dlpar_parse_uint(p, len, 1 << 20, &id) != 0)
      return -1;
    ids[n++] = (int)id;
    p = comma ? comma + 1 : NULL;
  }
  return n;
}

int dlpar_parse_cpu_list(const char *text, unsigned char *mask, int ncpus)
{
  dlpar_rank_list list;
  int count = 0;
  if (dlpar_rank_list_parse(text, &list) != 0 || list.all)
    return -1;
  memset(mask, 0, (size_t)ncpus);
  for (int i = 0; i < list.count; i++) {
    for (long cpu = list.range[i].lo; cpu <= list.range[i].hi && cpu < ncpus; cpu++) {
      count += !mask[cpu];
      mask[cpu] = 1;
    }
  }
  return count;
}

int dlpar_bind_cpus(const char *cpus)
{
  unsigned char wanted[CPU_SETSIZE];
  cpu_set_t allowed, chosen;
  int count = 0;
  if (!cpus[0] || dlpar_parse_cpu_list(cpus, wanted, CPU_SETSIZE) <= 0 ||
      sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
    return 0;
  CPU_ZERO(&chosen);
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (wanted[cpu] && CPU_ISSET(cpu, &allowed)) {
      CPU_SET(cpu, &chosen);
      count++;
    }
  }
  return count > 0 && sched_setaffinity(0, sizeof(chosen), &chosen) == 0 ? count : 0;
}
