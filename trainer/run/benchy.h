/* SPDX-License-Identifier: BSD-3-Clause */
/* trainer/run/benchy.h: dlpar-train --benchy, in benchy.c, runs the SC22
 * tutorial's benchmark instead of training, built on the step of step.h. */
#ifndef DLPAR_BENCHY_H
#define DLPAR_BENCHY_H

#include "trainer/run/train.h"

void benchy(trainer *t);

#endif
