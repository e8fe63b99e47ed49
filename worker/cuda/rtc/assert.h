// assert.h - kiln's <assert.h> for NVRTC: the same as its <cassert>.
#include <cassert>
