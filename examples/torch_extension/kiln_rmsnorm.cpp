// kiln_rmsnorm.cpp - the PyTorch binding: kiln_rmsnorm.rmsnorm(x, w, eps)
// for contiguous 2-D bf16 CUDA tensors, running the kiln export on
// PyTorch's current stream with scratch from PyTorch's allocator.
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <climits>

size_t kiln_example_scratch_bytes(int rows, int cols);
const char *kiln_example_rmsnorm(const void *x, const void *w, void *y, int rows, int cols, float eps,
                                 void *scratch, void *stream);

static torch::Tensor rmsnorm(const torch::Tensor &x, const torch::Tensor &w, double eps)
{
    TORCH_CHECK(x.is_cuda() && w.is_cuda(), "kiln rmsnorm: x and w must be CUDA tensors");
    TORCH_CHECK(x.scalar_type() == torch::kBFloat16 && w.scalar_type() == torch::kBFloat16,
                "kiln rmsnorm: the export is bf16; got ", x.scalar_type(), " and ", w.scalar_type());
    TORCH_CHECK(x.dim() == 2 && w.dim() == 1 && w.size(0) == x.size(1),
                "kiln rmsnorm: x must be [rows, cols] and w [cols]");
    TORCH_CHECK(x.size(0) > 0 && x.size(0) <= INT_MAX && x.size(1) > 0 && x.size(1) <= INT_MAX,
                "kiln rmsnorm: rows and cols must be 1..INT_MAX");
    const c10::cuda::CUDAGuard guard(x.device());
    const torch::Tensor xc = x.contiguous(), wc = w.contiguous();
    torch::Tensor y = torch::empty_like(xc);
    const int rows = (int)x.size(0), cols = (int)x.size(1);
    const size_t sb = kiln_example_scratch_bytes(rows, cols);
    torch::Tensor scratch;
    if (sb)   // PyTorch's allocator returns 512-byte aligned blocks
        scratch = torch::empty({(int64_t)sb}, xc.options().dtype(torch::kUInt8));
    const char *err = kiln_example_rmsnorm(xc.data_ptr(), wc.data_ptr(), y.data_ptr(), rows, cols,
                                           (float)eps, sb ? scratch.data_ptr() : nullptr,
                                           at::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(!err, "kiln rmsnorm: ", err ? err : "");
    return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("rmsnorm", &rmsnorm, "rmsnorm through a kiln export (bf16, CUDA)", pybind11::arg("x"),
          pybind11::arg("w"), pybind11::arg("eps") = 1e-6);
}
