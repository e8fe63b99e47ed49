/*
 * dispatch_utils.h - a kiln import fixture in the shape of vLLM's
 * csrc/dispatch_utils.h (written for kiln's tests, not copied): the type
 * dispatch macros a vLLM kernel file's host code uses, in terms of
 * ATen's AT_DISPATCH_SWITCH / AT_DISPATCH_CASE. Host code only.
 */
#pragma once

#include <torch/all.h>

// The floating types a kernel is built for: float, half and bfloat16.
#define VLLM_DISPATCH_CASE_FLOATING_TYPES(...)          \
  AT_DISPATCH_CASE(at::ScalarType::Float, __VA_ARGS__)  \
  AT_DISPATCH_CASE(at::ScalarType::Half, __VA_ARGS__)   \
  AT_DISPATCH_CASE(at::ScalarType::BFloat16, __VA_ARGS__)

#define VLLM_DISPATCH_FLOATING_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, VLLM_DISPATCH_CASE_FLOATING_TYPES(__VA_ARGS__))

// Only the 16-bit ones.
#define VLLM_DISPATCH_CASE_HALF_TYPES(...)              \
  AT_DISPATCH_CASE(at::ScalarType::Half, __VA_ARGS__)   \
  AT_DISPATCH_CASE(at::ScalarType::BFloat16, __VA_ARGS__)

#define VLLM_DISPATCH_HALF_TYPES(TYPE, NAME, ...) \
  AT_DISPATCH_SWITCH(TYPE, NAME, VLLM_DISPATCH_CASE_HALF_TYPES(__VA_ARGS__))

// A compile-time bool from a runtime one (not a type dispatch).
#define VLLM_DISPATCH_BOOL(expr, const_expr, ...) \
  if (expr) {                                     \
    constexpr bool const_expr = true;             \
    __VA_ARGS__();                                \
  } else {                                        \
    constexpr bool const_expr = false;            \
    __VA_ARGS__();                                \
  }
