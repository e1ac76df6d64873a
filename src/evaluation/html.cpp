#include "src/evaluation/html.h"

#include <cstdint>
#include <regex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

namespace bnn::evaluation {
namespace {

std::string escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      default: out += c;
    }
  }
  return out;
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

// `code`, then **bold** and [text](url) outside code; everything escaped.
std::string inline_html(const std::string& text) {
  // The shortest run between two "**": a single * inside (x*) stays text.
  static const std::regex bold(R"(\*\*(.+?)\*\*)");
  static const std::regex link(R"(\[([^\]]+)\]\(([^)\s]+)\))");
  std::string out;
  size_t pos = 0;
  bool code = false;
  while (pos <= text.size()) {
    const size_t tick = text.find('`', pos);
    const std::string part = text.substr(pos, tick == std::string::npos ? std::string::npos : tick - pos);
    if (code) {
      out += "<code>" + escape(part) + "</code>";
    } else {
      std::string html = escape(part);
      html = std::regex_replace(html, bold, "<strong>$1</strong>");
      html = std::regex_replace(html, link, "<a href=\"$2\">$1</a>");
      out += html;
    }
    if (tick == std::string::npos) break;
    code = !code;
    pos = tick + 1;
  }
  return out;
}

// The cells of "| a | b \| c |": split at unescaped pipes, trimmed.
std::vector<std::string> cells_of(const std::string& line) {
  std::string body = line;
  const auto first = body.find_first_not_of(' ');
  const auto last = body.find_last_not_of(' ');
  body = body.substr(first, last - first + 1);
  if (starts_with(body, "|")) body = body.substr(1);
  if (!body.empty() && body.back() == '|' && (body.size() < 2 || body[body.size() - 2] != '\\')) body.pop_back();
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] == '\\' && i + 1 < body.size() && body[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (body[i] == '|') {
      cells.push_back(cell);
      cell.clear();
    } else {
      cell += body[i];
    }
  }
  cells.push_back(cell);
  for (auto& c : cells) {
    const auto a = c.find_first_not_of(' ');
    const auto b = c.find_last_not_of(' ');
    c = a == std::string::npos ? "" : c.substr(a, b - a + 1);
  }
  return cells;
}

bool is_rule(const std::vector<std::string>& cells) {
  static const std::regex rule(R"(:?-+:?)");
  for (const auto& c : cells) {
    if (!std::regex_match(c, rule)) return false;
  }
  return !cells.empty();
}

std::string table_html(const std::vector<std::string>& lines) {
  const std::vector<std::string> header = cells_of(lines[0]);
  std::vector<std::string> align(header.size(), "left");
  size_t body_start = 1;
  if (lines.size() > 1 && is_rule(cells_of(lines[1]))) {
    const auto rule = cells_of(lines[1]);
    for (size_t c = 0; c < rule.size() && c < align.size(); ++c) {
      if (rule[c].back() == ':' && rule[c].front() != ':') align[c] = "right";
      if (rule[c].back() == ':' && rule[c].front() == ':') align[c] = "center";
    }
    body_start = 2;
  }
  std::string out = "<table>\n<thead><tr>";
  for (size_t c = 0; c < header.size(); ++c) {
    out += fmt::format("<th style=\"text-align:{}\">{}</th>", align[c], inline_html(header[c]));
  }
  out += "</tr></thead>\n<tbody>\n";
  for (size_t r = body_start; r < lines.size(); ++r) {
    const auto cells = cells_of(lines[r]);
    out += "<tr>";
    for (size_t c = 0; c < cells.size(); ++c) {
      out += fmt::format("<td style=\"text-align:{}\">{}</td>", c < align.size() ? align[c] : "left",
                         inline_html(cells[c]));
    }
    out += "</tr>\n";
  }
  return out + "</tbody>\n</table>\n";
}

constexpr const char* kStyle =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;max-width:1100px;margin:2em auto;"
    "padding:0 1em;color:#222;line-height:1.45}"
    "table{border-collapse:collapse;margin:1em 0;font-size:0.9em}"
    "th,td{border:1px solid #ccc;padding:0.25em 0.6em;white-space:nowrap}th{background:#f3f3f3}"
    "tbody tr:nth-child(even){background:#fafafa}"
    "code{background:#f3f3f3;padding:0 0.2em;border-radius:3px}"
    "figure{margin:1.5em 0}img{max-width:100%;border:1px solid #ddd}"
    "h1{border-bottom:2px solid #ddd}h2{border-bottom:1px solid #eee;margin-top:1.6em}";

}  // namespace

std::string markdown_to_html(const std::string& markdown, const std::string& title,
                             const std::function<std::string(const std::string&)>& image_source) {
  static const std::regex image(R"(^!\[([^\]]*)\]\(([^)\s]+)\)$)");
  std::vector<std::string> lines;
  std::istringstream in(markdown);
  for (std::string line; std::getline(in, line);) lines.push_back(line);

  std::string body;
  size_t i = 0;
  const auto blank = [&](size_t k) { return lines[k].find_first_not_of(" \t") == std::string::npos; };
  const auto block_start = [&](size_t k) {
    return starts_with(lines[k], "#") || starts_with(lines[k], "|") || starts_with(lines[k], "- ") ||
           starts_with(lines[k], "![");
  };
  while (i < lines.size()) {
    const std::string& line = lines[i];
    std::smatch m;
    if (blank(i)) {
      ++i;
    } else if (starts_with(line, "### ") || starts_with(line, "## ") || starts_with(line, "# ")) {
      const size_t level = line.find(' ');
      body += fmt::format("<h{0}>{1}</h{0}>\n", level, inline_html(line.substr(level + 1)));
      ++i;
    } else if (starts_with(line, "|")) {
      std::vector<std::string> rows;
      while (i < lines.size() && starts_with(lines[i], "|")) rows.push_back(lines[i++]);
      body += table_html(rows);
    } else if (starts_with(line, "- ")) {
      body += "<ul>\n";
      while (i < lines.size() && starts_with(lines[i], "- ")) {
        body += "<li>" + inline_html(lines[i++].substr(2)) + "</li>\n";
      }
      body += "</ul>\n";
    } else if (std::regex_match(line, m, image)) {
      body += fmt::format("<figure><img alt=\"{}\" src=\"{}\"></figure>\n", escape(m[1].str()),
                          escape(image_source(m[2].str())));
      ++i;
    } else {
      std::string text;
      while (i < lines.size() && !blank(i) && (text.empty() || !block_start(i))) {
        text += (text.empty() ? "" : "\n") + lines[i++];
      }
      body += "<p>" + inline_html(text) + "</p>\n";
    }
  }
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
                     "<style>{}</style>\n</head>\n<body>\n{}</body>\n</html>\n",
                     escape(title), kStyle, body);
}

std::string data_uri(const std::string& bytes, const std::string& mime) {
  static const char* kAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out = "data:" + mime + ";base64,";
  out.reserve(out.size() + (bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < bytes.size(); i += 3) {
    const uint32_t v = (static_cast<uint8_t>(bytes[i]) << 16) | (static_cast<uint8_t>(bytes[i + 1]) << 8) |
                       static_cast<uint8_t>(bytes[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (i < bytes.size()) {
    uint32_t v = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kAlphabet[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

}  // namespace bnn::evaluation
