// fmt's implementation, compiled once for every file that includes LibTorch
// (cmake/libtorch.cmake says why). Outside header-only mode format-inl.h
// defines fmt's functions here, not inline in each file; the templates that
// fmt's headers declare but leave to its library are instantiated below, for
// the types acprof formats (char strings and floating point).
#include <fmt/format-inl.h>

FMT_BEGIN_NAMESPACE
namespace detail {

template FMT_API auto dragonbox::to_decimal(float x) noexcept -> dragonbox::decimal_fp<float>;
template FMT_API auto dragonbox::to_decimal(double x) noexcept -> dragonbox::decimal_fp<double>;

template FMT_API auto thousands_sep_impl(locale_ref) -> thousands_sep_result<char>;
template FMT_API auto decimal_point_impl(locale_ref) -> char;

}  // namespace detail
FMT_END_NAMESPACE
