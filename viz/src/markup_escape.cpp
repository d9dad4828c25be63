#include "markup_escape.h"

namespace acprof::viz {

std::string jsonForScriptElement(const nlohmann::json& data) {
  // ensure_ascii=false keeps non-ASCII names readable in the file; the
  // replace handler turns invalid UTF-8 into U+FFFD instead of throwing.
  const std::string text = data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string safe;
  safe.reserve(text.size() + text.size() / 16);
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    // Outside strings JSON has none of these characters, so escaping them
    // wherever they occur only ever touches string contents.
    if (c == '<') {
      safe += "\\u003c";
    } else if (c == '>') {
      safe += "\\u003e";
    } else if (c == '&') {
      safe += "\\u0026";
    } else if (c == '\xE2' && i + 2 < text.size() && text[i + 1] == '\x80' &&
               (text[i + 2] == '\xA8' || text[i + 2] == '\xA9')) {
      safe += text[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else {
      safe += c;
    }
  }
  return safe;
}

std::string validUtf8(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    size_t length = 0;
    uint32_t min_code_point = 0;
    if (c < 0x80) {
      length = 1;
    } else if ((c & 0xE0) == 0xC0) {
      length = 2, min_code_point = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      length = 3, min_code_point = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      length = 4, min_code_point = 0x10000;
    }
    bool valid = length > 0 && i + length <= n;
    uint32_t code_point = length == 1 ? c : (c & (0x7F >> length));
    for (size_t k = 1; valid && k < length; ++k) {
      if ((s[i + k] & 0xC0) != 0x80) valid = false;
      code_point = (code_point << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms, surrogates and code points past U+10FFFF are invalid too.
    if (valid && length > 1 &&
        (code_point < min_code_point || code_point > 0x10FFFF || (code_point >= 0xD800 && code_point <= 0xDFFF)))
      valid = false;
    if (valid) {
      out.append(text, i, length);
      i += length;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::string escapeMarkupText(const std::string& text) {
  std::string out;
  for (const char c : validUtf8(text)) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace acprof::viz
