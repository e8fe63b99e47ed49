// limits.h - kiln's <limits.h> for NVRTC: the same as its <climits>.
#include <climits>
