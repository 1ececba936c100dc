#include "report/json_limits.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "core/errors.h"

namespace fa {

using nlohmann::json;

TextPosition position_of(const std::string& text, size_t byte) {
  TextPosition lc;
  for (size_t i = 0; i < std::min(byte, text.size()); ++i) {
    if (text[i] == '\n') {
      ++lc.line;
      lc.col = 1;
    } else {
      ++lc.col;
    }
  }
  return lc;
}

std::string last_key_before(const std::string& text, size_t byte) {
  // The last `"identifier" :` before byte, found scanning backwards from each ':'.
  auto ident = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  size_t end = std::min(byte, text.size());
  while (end > 0) {
    const size_t colon = text.rfind(':', end - 1);
    if (colon == std::string::npos) break;
    size_t i = colon;
    while (i > 0 && std::isspace(static_cast<unsigned char>(text[i - 1]))) --i;
    if (i > 0 && text[i - 1] == '"') {
      const size_t close = i - 1;
      size_t open = close;
      while (open > 0 && ident(text[open - 1])) --open;
      if (open > 0 && open < close && text[open - 1] == '"' &&
          !std::isdigit(static_cast<unsigned char>(text[open])))
        return text.substr(open, close - open);
    }
    end = colon;
  }
  return "";
}

namespace {

// The byte where nesting first exceeds the limit, or npos. Brackets inside
// strings do not count.
size_t too_deep_at(const std::string& text) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::string::npos;
}

std::string where_text(const std::string& what, const std::string& text, size_t byte) {
  const TextPosition p = position_of(text, byte);
  const std::string key = last_key_before(text, byte);
  return fmt::format("{}:{}:{}{}", what, p.line, p.col, key.empty() ? "" : fmt::format(" (after key '{}')", key));
}

// nlohmann's what() is "[json.exception.parse_error.101] parse error at line 3,
// column 15: syntax error while parsing ..."; keep only the part after the position.
std::string reason_of(const std::string& what) {
  auto col = what.find("column ");
  auto pos = col == std::string::npos ? std::string::npos : what.find(": ", col);
  if (pos != std::string::npos) return what.substr(pos + 2);
  auto bracket = what.find("] ");
  return bracket == std::string::npos ? what : what.substr(bracket + 2);
}

}  // namespace

json parse_json_bounded(const std::string& text, const std::string& what) {
  if (size_t at = too_deep_at(text); at != std::string::npos)
    throw UsageError(fmt::format("{}: JSON nested deeper than {} levels; expected a flat settings or results "
                                 "file",
                                 where_text(what, text, at), kMaxJsonDepth));
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw UsageError(fmt::format("{}: malformed JSON: {}", where_text(what, text, e.byte > 0 ? e.byte - 1 : 0),
                                 reason_of(e.what())));
  } catch (const json::exception& e) {
    // A number beyond double (1e400) or int64: nlohmann names the token, not where it is.
    std::string reason = reason_of(e.what());
    size_t at = std::string::npos;
    if (auto q = reason.find('\''); q != std::string::npos) {
      auto q2 = reason.find('\'', q + 1);
      if (q2 != std::string::npos) at = text.find(reason.substr(q + 1, q2 - q - 1));
    }
    throw UsageError(fmt::format("{}: {}; expected a number a double can hold",
                                 at == std::string::npos ? what : where_text(what, text, at), reason));
  }
}

std::string dump_json(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace fa
