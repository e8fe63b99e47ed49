// stdint.h - kiln's <stdint.h> for NVRTC: the same as its <cstdint>.
#include <cstdint>
