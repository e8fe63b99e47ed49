// stddef.h - kiln's <stddef.h> for NVRTC: the same as its <cstddef>.
#include <cstddef>
