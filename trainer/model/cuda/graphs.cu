/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/model/cuda/graphs.cu: CUDA graphs (cuda_graph: true): a step's
 * forward/backward and Adam run eagerly once, then captured and replayed;
 * the events the copy stream waits on, recorded also inside a capture. */
#include "config.h"

#include "trainer/model/cuda/model_cuda.h"

/* Records ev on the compute stream for the copy stream to wait on: while
 * a CUDA graph is captured, as an external event node (every replay
 * records it again; cudaEventRecordExternal is refused outside a capture),
 * else as a plain record. */
int mc_record_for_copy(model_cuda *m, cudaEvent_t ev)
{
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  MODEL_TRY(cudaStreamIsCapturing(m->compute, &capture), m);
  MODEL_TRY(cudaEventRecordWithFlags(ev, m->compute,
                                     capture == cudaStreamCaptureStatusActive ? cudaEventRecordExternal
                                                                              : cudaEventRecordDefault), m);
  return DLPAR_OK;
}

/* Runs body eagerly (always without cuda_graph; else the first time, as a
 * warm-up), or captures it into work->exec on the second call, then replays
 * it. Events the host or the copy stream wait on are recorded by the
 * callers, outside: a record inside a capture is not repeated by replays. */
int mc_run_captured(model_cuda *m, captured_work *work, int (*body)(model_cuda *, int), int arg)
{
  cudaGraph_t captured;
  int rc;
  if (!m->base.cfg.cuda_graph || !work->warmed_up) {
    work->warmed_up = true;
    return body(m, arg);
  }
  if (!work->exec) {
    MODEL_TRY(cudaStreamBeginCapture(m->compute, cudaStreamCaptureModeGlobal), m);
    rc = body(m, arg);
    MODEL_TRY(cudaStreamEndCapture(m->compute, &captured), m);
    DLPAR_TRY(rc);
    rc = cudaGraphInstantiate(&work->exec, captured, 0);
    cudaGraphDestroy(captured);
    MODEL_TRY(rc, m);
  }
  MODEL_TRY(cudaGraphLaunch(work->exec, m->compute), m);
  dlpar_graph_launched(m->base.comm);
  return DLPAR_OK;
}
