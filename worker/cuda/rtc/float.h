// float.h - kiln's <float.h> for NVRTC: the same as its <cfloat>.
#include <cfloat>
