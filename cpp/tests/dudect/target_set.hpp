// The target set a dudect / ct_valgrind binary is built for (one harness, several binaries):
// -DDUDECT_LDP_TARGETS: the local-DP randomizers (ldp_targets.hpp); -DDUDECT_TARGETS_NS=ns
// -include <header>: another set (targets_mean.hpp); otherwise the samplers (targets.hpp).
#pragma once

#ifdef DUDECT_LDP_TARGETS
#include "ldp_targets.hpp"
using namespace dudect_ldp_targets;
#else
#include "targets.hpp"
#ifndef DUDECT_TARGETS_NS
#define DUDECT_TARGETS_NS dudect_targets
#endif
using namespace DUDECT_TARGETS_NS;
#endif
