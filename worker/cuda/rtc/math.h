// math.h - kiln's <math.h> for NVRTC: the same as its <cmath>.
#include <cmath>
