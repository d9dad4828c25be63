// Reading acprof's JSON files field by field: the one reader that the profile
// and plan formats share. nlohmann's own conversions are not enough for a file
// a user hands us: they cast any number to any arithmetic type (1e300 read as
// an int is undefined behaviour, 2.5 silently becomes 2), a number too large
// for a double is an out_of_range exception rather than a parse error, and
// their messages ("type_error.302") name neither the file nor the field. Here
// every problem is a FormatError naming the file, the field and the fix.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "acprof/profile_format.h"

namespace acprof::json_fields {

// The file being read and what to do about a damaged one, for messages:
// {"plan.json", "re-run 'acprof plan' to regenerate it"}.
struct Source {
  const std::string& name;
  const char* fix;
};

inline nlohmann::json parse(const std::string& text, const Source& source) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw FormatError(fmt::format("{}: not valid JSON (byte {}); {}", printable(source.name), e.byte, source.fix));
  } catch (const nlohmann::json::exception&) {
    // out_of_range.406: a number such as 1e400 that no double holds.
    throw FormatError(fmt::format("{}: not valid JSON (a number out of range); {}", printable(source.name),
                                  source.fix));
  }
}

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};

// Whether `value` holds a T exactly: integers that are integers and fit.
template <typename T>
bool holds(const nlohmann::json& value) {
  if constexpr (std::is_same_v<T, bool>) {
    return value.is_boolean();
  } else if constexpr (std::is_integral_v<T>) {
    if (value.is_number_unsigned())
      return value.get<uint64_t>() <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    if (!value.is_number_integer()) return false;
    const int64_t number = value.get<int64_t>();
    return number >= static_cast<int64_t>(std::numeric_limits<T>::min()) &&
           number <= static_cast<int64_t>(std::numeric_limits<T>::max());
  } else if constexpr (std::is_floating_point_v<T>) {
    return value.is_number();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return value.is_string();
  } else if constexpr (IsVector<T>::value) {
    if (!value.is_array()) return false;
    for (const nlohmann::json& element : value)
      if (!holds<typename T::value_type>(element)) return false;
    return true;
  } else {
    static_assert(std::is_same_v<T, nlohmann::json>, "a field type the formats do not use");
    return true;
  }
}

template <typename T>
T field(const nlohmann::json& object, const char* key, const Source& source) {
  const auto it = object.is_object() ? object.find(key) : object.end();
  if (it == object.end())
    throw FormatError(fmt::format("{}: missing field '{}'; {}", printable(source.name), key, source.fix));
  if (!holds<T>(*it))
    throw FormatError(fmt::format("{}: field '{}' has the wrong type or is out of range; {}", printable(source.name),
                                  key, source.fix));
  return it->template get<T>();
}

// A field that older files may lack: absent is nullopt, present must hold a T.
template <typename T>
std::optional<T> optionalField(const nlohmann::json& object, const char* key, const Source& source) {
  if (!object.is_object() || !object.contains(key)) return std::nullopt;
  return field<T>(object, key, source);
}

// A field that holds a list of objects (nodes, steps, segments).
inline const nlohmann::json& arrayField(const nlohmann::json& object, const char* key, const Source& source) {
  const auto it = object.is_object() ? object.find(key) : object.end();
  if (it == object.end())
    throw FormatError(fmt::format("{}: missing field '{}'; {}", printable(source.name), key, source.fix));
  if (!it->is_array())
    throw FormatError(fmt::format("{}: field '{}' is not a list; {}", printable(source.name), key, source.fix));
  return *it;
}

// Bytes per category, as an object keyed by category name: the form of every
// breakdown in both formats (a step's bytes at its end, the peak's, the plan's).
inline nlohmann::json categoryBytesToJson(const CategoryBytes& bytes) {
  nlohmann::json out = nlohmann::json::object();
  for (int c = 0; c < kCategoryCount; ++c) out[categoryName(static_cast<Category>(c))] = bytes[c];
  return out;
}

inline CategoryBytes categoryBytesField(const nlohmann::json& object, const char* key, const Source& source) {
  const nlohmann::json breakdown = field<nlohmann::json>(object, key, source);
  CategoryBytes bytes{};
  for (int c = 0; c < kCategoryCount; ++c) {
    const char* name = categoryName(static_cast<Category>(c));
    if (c >= static_cast<int>(kFirstCategoryAddedLater) && breakdown.is_object() && !breakdown.contains(name)) continue;
    bytes[c] = field<int64_t>(breakdown, name, source);
  }
  return bytes;
}

}  // namespace acprof::json_fields
