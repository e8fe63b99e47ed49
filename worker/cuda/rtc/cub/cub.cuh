// cub/cub.cuh - kiln's <cub/cub.cuh> for NVRTC. CUB's own pulls in its
// device-wide algorithms (cub::DeviceReduce, ...), which are host code
// that NVRTC cannot compile and a candidate could not call anyway (kiln runs
// no candidate host code). This one includes the rest of what CUB's does, as
// far as this CUDA has it: the block, warp, thread and grid primitives,
// iterators and utilities. Under nvcc (an exported kernel) the real header
// is used, which has all of these too.
#ifndef KILN_RTC_CUB_CUH
#define KILN_RTC_CUB_CUH
#if __has_include(<cub/config.cuh>)
#include <cub/config.cuh>
#endif
#if __has_include(<cub/block/block_adjacent_difference.cuh>)
#include <cub/block/block_adjacent_difference.cuh>
#endif
#if __has_include(<cub/block/block_discontinuity.cuh>)
#include <cub/block/block_discontinuity.cuh>
#endif
#if __has_include(<cub/block/block_exchange.cuh>)
#include <cub/block/block_exchange.cuh>
#endif
#if __has_include(<cub/block/block_histogram.cuh>)
#include <cub/block/block_histogram.cuh>
#endif
#if __has_include(<cub/block/block_load.cuh>)
#include <cub/block/block_load.cuh>
#endif
#if __has_include(<cub/block/block_merge_sort.cuh>)
#include <cub/block/block_merge_sort.cuh>
#endif
#if __has_include(<cub/block/block_radix_rank.cuh>)
#include <cub/block/block_radix_rank.cuh>
#endif
#if __has_include(<cub/block/block_radix_sort.cuh>)
#include <cub/block/block_radix_sort.cuh>
#endif
#if __has_include(<cub/block/block_reduce.cuh>)
#include <cub/block/block_reduce.cuh>
#endif
#if __has_include(<cub/block/block_scan.cuh>)
#include <cub/block/block_scan.cuh>
#endif
#if __has_include(<cub/block/block_store.cuh>)
#include <cub/block/block_store.cuh>
#endif
#if __has_include(<cub/grid/grid_even_share.cuh>)
#include <cub/grid/grid_even_share.cuh>
#endif
#if __has_include(<cub/grid/grid_mapping.cuh>)
#include <cub/grid/grid_mapping.cuh>
#endif
#if __has_include(<cub/grid/grid_queue.cuh>)
#include <cub/grid/grid_queue.cuh>
#endif
#if __has_include(<cub/thread/thread_load.cuh>)
#include <cub/thread/thread_load.cuh>
#endif
#if __has_include(<cub/thread/thread_operators.cuh>)
#include <cub/thread/thread_operators.cuh>
#endif
#if __has_include(<cub/thread/thread_reduce.cuh>)
#include <cub/thread/thread_reduce.cuh>
#endif
#if __has_include(<cub/thread/thread_scan.cuh>)
#include <cub/thread/thread_scan.cuh>
#endif
#if __has_include(<cub/thread/thread_store.cuh>)
#include <cub/thread/thread_store.cuh>
#endif
#if __has_include(<cub/warp/warp_exchange.cuh>)
#include <cub/warp/warp_exchange.cuh>
#endif
#if __has_include(<cub/warp/warp_load.cuh>)
#include <cub/warp/warp_load.cuh>
#endif
#if __has_include(<cub/warp/warp_merge_sort.cuh>)
#include <cub/warp/warp_merge_sort.cuh>
#endif
#if __has_include(<cub/warp/warp_reduce.cuh>)
#include <cub/warp/warp_reduce.cuh>
#endif
#if __has_include(<cub/warp/warp_scan.cuh>)
#include <cub/warp/warp_scan.cuh>
#endif
#if __has_include(<cub/warp/warp_store.cuh>)
#include <cub/warp/warp_store.cuh>
#endif
#if __has_include(<cub/iterator/arg_index_input_iterator.cuh>)
#include <cub/iterator/arg_index_input_iterator.cuh>
#endif
#if __has_include(<cub/iterator/cache_modified_input_iterator.cuh>)
#include <cub/iterator/cache_modified_input_iterator.cuh>
#endif
#if __has_include(<cub/iterator/cache_modified_output_iterator.cuh>)
#include <cub/iterator/cache_modified_output_iterator.cuh>
#endif
#if __has_include(<cub/iterator/tex_obj_input_iterator.cuh>)
#include <cub/iterator/tex_obj_input_iterator.cuh>
#endif
#if __has_include(<cub/util_debug.cuh>)
#include <cub/util_debug.cuh>
#endif
#if __has_include(<cub/util_device.cuh>)
#include <cub/util_device.cuh>
#endif
#if __has_include(<cub/util_ptx.cuh>)
#include <cub/util_ptx.cuh>
#endif
#if __has_include(<cub/util_temporary_storage.cuh>)
#include <cub/util_temporary_storage.cuh>
#endif
#if __has_include(<cub/util_type.cuh>)
#include <cub/util_type.cuh>
#endif
#endif
