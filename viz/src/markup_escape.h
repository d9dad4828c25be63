// Making text from a model (op names, scopes, tensor names, file paths) safe
// inside HTML, SVG and <script> elements. Names are data, never markup.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace acprof::viz {

// `data` as JSON text that can sit inside <script type="application/json">
// and be parsed back with JSON.parse unchanged: '<', '>' and '&' are written
// as \u003c, \u003e, \u0026 (so no "</script>" or "<!--" can appear), U+2028
// and U+2029 as \u2028, \u2029; invalid UTF-8 becomes U+FFFD.
std::string jsonForScriptElement(const nlohmann::json& data);

// Text for an XML/HTML text node or a quoted attribute value: & < > " ' are
// escaped and invalid UTF-8 becomes U+FFFD.
std::string escapeMarkupText(const std::string& text);

// Valid UTF-8 with every invalid byte sequence replaced by U+FFFD.
std::string validUtf8(const std::string& text);

}  // namespace acprof::viz
