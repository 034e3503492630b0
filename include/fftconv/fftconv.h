/* fftconv C API: mirrors the C++ API with status codes, for FFI. No function throws. */
#ifndef FFTCONV_FFTCONV_H_
#define FFTCONV_FFTCONV_H_

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#include "fftconv/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Same values as fftconv::Status. */
typedef enum fftconv_status {
  FFTCONV_STATUS_SUCCESS = 0,
  FFTCONV_STATUS_BAD_SHAPE = 1,
  FFTCONV_STATUS_KERNEL_TOO_LARGE = 2,
  FFTCONV_STATUS_BAD_GROUPS = 3,
  FFTCONV_STATUS_UNSUPPORTED_DTYPE = 4,
  FFTCONV_STATUS_NULL_POINTER = 5,
  FFTCONV_STATUS_MISALIGNED_POINTER = 6,
  FFTCONV_STATUS_WORKSPACE_TOO_SMALL = 7,
  FFTCONV_STATUS_NOT_SUPPORTED = 8,
  FFTCONV_STATUS_NO_DEVICE = 9,
  FFTCONV_STATUS_OUT_OF_MEMORY = 10,
  FFTCONV_STATUS_CUDA_ERROR = 11,
  FFTCONV_STATUS_CUFFT_ERROR = 12,
  FFTCONV_STATUS_CUDNN_ERROR = 13,
  FFTCONV_STATUS_INVALID_ARGUMENT = 14,
  FFTCONV_STATUS_INTERNAL = 15
} fftconv_status_t;

typedef enum fftconv_dtype {
  FFTCONV_DTYPE_F32 = 0,
  FFTCONV_DTYPE_F16 = 1,
  FFTCONV_DTYPE_BF16 = 2
} fftconv_dtype_t;

/* Same values as fftconv::Border: what the input holds where the padding reaches. */
typedef enum fftconv_border {
  FFTCONV_BORDER_ZERO = 0,
  FFTCONV_BORDER_REFLECT = 1,
  FFTCONV_BORDER_REPLICATE = 2,
  FFTCONV_BORDER_CIRCULAR = 3
} fftconv_border_t;

typedef enum fftconv_algo {
  FFTCONV_ALGO_AUTO = 0,
  FFTCONV_ALGO_FFT = 1,
  FFTCONV_ALGO_CUDNN = 2,
  FFTCONV_ALGO_FFT_TILED = 3,
  FFTCONV_ALGO_FFT_FUSED = 4,
  FFTCONV_ALGO_SEPARABLE = 5, /* kept low-rank filters as 1-D passes (fftconv::Algo::kSeparable) */
  FFTCONV_ALGO_DIRECT = 6,    /* each output summed over its taps (fftconv::Algo::kDirect) */
  FFTCONV_ALGO_IMPLICIT_GEMM = 7 /* backward filter on tensor cores, 3xTF32 (Algo::kImplicitGemm) */
} fftconv_algo_t;

/* Same values as fftconv::Pass: one pass per plan. */
typedef enum fftconv_pass {
  FFTCONV_PASS_FORWARD = 0,
  FFTCONV_PASS_BACKWARD_DATA = 1,
  FFTCONV_PASS_BACKWARD_FILTER = 2
} fftconv_pass_t;

/* Same values as fftconv::Backend. FFTCONV_BACKEND_CPU plans take host pointers, need no
   workspace and ignore the stream. */
typedef enum fftconv_backend {
  FFTCONV_BACKEND_GPU = 0,
  FFTCONV_BACKEND_CPU = 1,
  FFTCONV_BACKEND_AUTO = 2
} fftconv_backend_t;

/* Same values as fftconv::Tuning. */
typedef enum fftconv_tuning {
  FFTCONV_TUNING_HEURISTIC = 0,
  FFTCONV_TUNING_AUTOTUNE = 1,
  FFTCONV_TUNING_EXHAUSTIVE = 2
} fftconv_tuning_t;

/* See fftconv::ConvDesc for the semantics. Start from fftconv_conv_desc_default() (or zero the
   struct) so that fields added later, such as `border`, hold their defaults. */
typedef struct fftconv_conv_desc {
  int64_t n, c, h, w;
  int64_t k, r, s;
  int64_t pad_h, pad_w;
  int64_t stride_h, stride_w;
  int64_t dil_h, dil_w;
  int64_t groups;
  fftconv_dtype_t dtype;
  fftconv_border_t border; /* FFTCONV_BORDER_ZERO: F.conv2d's zero padding */
} fftconv_conv_desc_t;

typedef struct fftconv_options {
  fftconv_algo_t algo;
  size_t workspace_limit;    /* SIZE_MAX: no limit */
  int allow_tf32;            /* cuDNN path only */
  fftconv_pass_t pass;       /* the pass the plan computes */
  int dw_fp32;               /* backward filter with fp16/bf16 data: write dw in fp32 */
  fftconv_backend_t backend; /* where the plan runs */
  fftconv_tuning_t tuning;   /* how the FFT path picks its GEMM tiling (and FFT size) */
  const char*
      tuning_cache;     /* JSON tuning cache for autotune/exhaustive; NULL: $FFTCONV_TUNING_CACHE */
  int64_t fft_h, fft_w; /* FFT paths: forced FFT (or tile) size; 0, 0: chosen */
  const char* gemm_kernel; /* FFT path: forced GEMM tiling by name; NULL: chosen */
  const char* cudnn_algo;  /* cuDNN path: forced algorithm by name; NULL: searched */
  int cudnn_search;        /* cuDNN path: 0 time every algorithm (find), 1 heuristic choice,
                              2 graph API engines, timed (see fftconv::CudnnSearch::kGraph),
                              3 the faster of 0 and 2 (default) */
  int check_pointers;      /* GPU plans: reject pointers that are not device memory (default 1) */
  int kept_separable;      /* Auto GPU plans: run kept low-rank filters as 1-D passes where
                              cheaper (default 1); see fftconv::Options::kept_separable */
  int graph_replay;        /* GPU plans: replay a call with pointers seen before as one CUDA
                              graph (default 1); see fftconv::Options::graph_replay */
  int fft_callbacks;       /* GPU FFT plans: pad in a cuFFT load callback (default 0); see
                              fftconv::Options::fft_callbacks */
  int own_fft;             /* GPU FFT plans: pad + r2c and c2r + clip in own one-pass kernels
                              (default 0); see fftconv::Options::own_fft */
} fftconv_options_t;

typedef struct fftconv_plan* fftconv_plan_t;

/* A descriptor with n=c=h=w=k=r=s=1, no padding, unit stride and dilation, one group, f32,
   zero border. */
FFTCONV_API fftconv_conv_desc_t fftconv_conv_desc_default(void);
/* Algo auto, no workspace limit, TF32 off, forward pass, dw in the data's dtype, GPU backend,
   heuristic tuning, nothing forced (the strings NULL, the FFT size 0 x 0). The strings are copied
   by fftconv_plan_create. */
FFTCONV_API fftconv_options_t fftconv_options_default(void);

/* Checks a descriptor without touching the GPU. */
FFTCONV_API fftconv_status_t fftconv_conv_desc_validate(const fftconv_conv_desc_t* desc);
/* Writes the canonical string (NUL-terminated, truncated to buf_len); *needed gets its length + 1.
 */
FFTCONV_API fftconv_status_t fftconv_conv_desc_to_string(const fftconv_conv_desc_t* desc, char* buf,
                                                         size_t buf_len, size_t* needed);

/* options may be NULL (defaults). On failure *plan is set to NULL. */
FFTCONV_API fftconv_status_t fftconv_plan_create(fftconv_plan_t* plan,
                                                 const fftconv_conv_desc_t* desc,
                                                 const fftconv_options_t* options);
/* Accepts NULL. */
FFTCONV_API fftconv_status_t fftconv_plan_destroy(fftconv_plan_t plan);
FFTCONV_API fftconv_status_t fftconv_plan_workspace_size(fftconv_plan_t plan, size_t* bytes);
/* The plan's one-line description (valid until the plan is destroyed). */
FFTCONV_API const char* fftconv_plan_describe(fftconv_plan_t plan);
FFTCONV_API fftconv_status_t fftconv_forward(fftconv_plan_t plan, const void* x, const void* w,
                                             const void* bias, void* y, void* workspace,
                                             size_t workspace_bytes, cudaStream_t stream);

/* Backward passes of plans built with options.pass set accordingly; see
   fftconv::Plan::backward_data and backward_filter (dw = alpha * dL/dw + beta * dw). */
FFTCONV_API fftconv_status_t fftconv_backward_data(fftconv_plan_t plan, const void* dy,
                                                   const void* w, void* dx, void* workspace,
                                                   size_t workspace_bytes, cudaStream_t stream);
FFTCONV_API fftconv_status_t fftconv_backward_filter(fftconv_plan_t plan, const void* x,
                                                     const void* dy, void* dw, void* workspace,
                                                     size_t workspace_bytes, cudaStream_t stream,
                                                     float alpha, float beta);

/* Keeps the filter (its spectrum for the FFT paths) in memory the plan owns; afterwards w may be
   NULL in fftconv_forward (and fftconv_backward_data). See fftconv::Plan::set_filter. */
FFTCONV_API fftconv_status_t fftconv_plan_set_filter(fftconv_plan_t plan, const void* w,
                                                     cudaStream_t stream);
FFTCONV_API fftconv_status_t fftconv_plan_clear_filter(fftconv_plan_t plan);

/* A per-call filter's spectrum in caller memory, shared by the forward and backward-data plans
   of one layer (see fftconv::Plan::filter_spectrum_size): *bytes is 0 where the plan has none.
   *shared is 1 when plans a and b read each other's spectra. */
FFTCONV_API fftconv_status_t fftconv_plan_filter_spectrum_size(fftconv_plan_t plan, size_t* bytes);
FFTCONV_API fftconv_status_t fftconv_plans_share_filter_spectrum(fftconv_plan_t a, fftconv_plan_t b,
                                                                 int* shared);
FFTCONV_API fftconv_status_t fftconv_filter_spectrum(fftconv_plan_t plan, const void* w,
                                                     void* spectrum, void* workspace,
                                                     size_t workspace_bytes, cudaStream_t stream);
FFTCONV_API fftconv_status_t fftconv_forward_with_spectrum(fftconv_plan_t plan, const void* x,
                                                           const void* spectrum, const void* bias,
                                                           void* y, void* workspace,
                                                           size_t workspace_bytes,
                                                           cudaStream_t stream);
FFTCONV_API fftconv_status_t fftconv_backward_data_with_spectrum(fftconv_plan_t plan,
                                                                 const void* dy,
                                                                 const void* spectrum, void* dx,
                                                                 void* workspace,
                                                                 size_t workspace_bytes,
                                                                 cudaStream_t stream);

/* Stable name ("bad_shape") and one-line description of a status. */
FFTCONV_API const char* fftconv_status_name(fftconv_status_t status);
FFTCONV_API const char* fftconv_status_string(fftconv_status_t status);
/* Message of the last failed call on this thread ("" when none). */
FFTCONV_API const char* fftconv_last_error_message(void);

/* Logging (see fftconv/log.hpp): levels 0 off, 1 error, 2 warning, 3 info, 4 debug. The callback
   receives each message at or above the level; NULL restores the default sink (stderr). */
typedef void (*fftconv_log_callback_t)(int level, const char* message, void* user_data);
FFTCONV_API void fftconv_set_log_callback(fftconv_log_callback_t callback, void* user_data);
FFTCONV_API void fftconv_set_log_level(int level);

#ifdef __cplusplus
}
#endif

#endif /* FFTCONV_FFTCONV_H_ */
