// Tests for src/evaluation/html.h: the Markdown render_report writes, as HTML
// (headings, aligned tables with escaped pipes, lists, inline code, bold and
// links, images through the caller's source), HTML special characters
// escaped, and base64 data URIs checked against RFC 4648's test vectors.
#include "src/evaluation/html.h"

#include <gtest/gtest.h>

#include <string>

namespace bnn::evaluation {
namespace {

TEST(Html, RendersTheReportsMarkdown) {
  const std::string markdown =
      "# bnn evaluation report\n"
      "\n"
      "Runs: `runs/a<b>` with **4** members, see [docs](docs/design.md).\n"
      "Second line of the paragraph.\n"
      "\n"
      "- **member_001 diverged**: loss & more\n"
      "- **member_002 diverged: x* itself** and **b**\n"
      "- second\n"
      "\n"
      "## Per-class accuracy\n"
      "\n"
      "| class | bayes |\n"
      "|:---|---:|\n"
      "| Shirt \\| top | 0.5000 |\n"
      "| 2 | – |\n"
      "\n"
      "![loss_traces](figures/loss_traces.png)\n"
      "\n"
      "[loss_traces.svg](figures/loss_traces.svg)\n";
  std::string asked;
  const std::string html = markdown_to_html(markdown, "report <1>", [&](const std::string& src) {
    asked = src;
    return "data:image/png;base64,AAAA";
  });
  EXPECT_EQ(asked, "figures/loss_traces.png");
  for (const char* text : {
           "<title>report &lt;1&gt;</title>",
           "<h1>bnn evaluation report</h1>",
           "<p>Runs: <code>runs/a&lt;b&gt;</code> with <strong>4</strong> members, see <a "
           "href=\"docs/design.md\">docs</a>.\nSecond line of the paragraph.</p>",
           "<ul>\n<li><strong>member_001 diverged</strong>: loss &amp; more</li>\n<li><strong>member_002 diverged: "
           "x* itself</strong> and <strong>b</strong></li>\n<li>second</li>\n</ul>",
           "<h2>Per-class accuracy</h2>",
           "<th style=\"text-align:left\">class</th><th style=\"text-align:right\">bayes</th>",
           "<td style=\"text-align:left\">Shirt | top</td><td style=\"text-align:right\">0.5000</td>",
           "<td style=\"text-align:left\">2</td><td style=\"text-align:right\">–</td>",
           "<figure><img alt=\"loss_traces\" src=\"data:image/png;base64,AAAA\"></figure>",
           "<p><a href=\"figures/loss_traces.svg\">loss_traces.svg</a></p>",
       }) {
    EXPECT_NE(html.find(text), std::string::npos) << text << "\n" << html;
  }
  // Every element opened is closed.
  for (const char* tag : {"p", "table", "tr", "td", "th", "ul", "li", "h1", "h2", "code", "strong", "a", "figure"}) {
    const auto count = [&](const std::string& s) {
      size_t n = 0;
      for (size_t at = html.find(s); at != std::string::npos; at = html.find(s, at + 1)) ++n;
      return n;
    };
    EXPECT_EQ(count(std::string("<") + tag + ">") + count(std::string("<") + tag + " "),
              count(std::string("</") + tag + ">"))
        << tag;
  }
}

TEST(Html, DataUrisAreBase64) {
  EXPECT_EQ(data_uri("", "text/plain"), "data:text/plain;base64,");
  EXPECT_EQ(data_uri("f", "x/y"), "data:x/y;base64,Zg==");
  EXPECT_EQ(data_uri("fo", "x/y"), "data:x/y;base64,Zm8=");
  EXPECT_EQ(data_uri("foo", "x/y"), "data:x/y;base64,Zm9v");
  EXPECT_EQ(data_uri("foob", "x/y"), "data:x/y;base64,Zm9vYg==");
  EXPECT_EQ(data_uri("fooba", "x/y"), "data:x/y;base64,Zm9vYmE=");
  EXPECT_EQ(data_uri("foobar", "x/y"), "data:x/y;base64,Zm9vYmFy");
  EXPECT_EQ(data_uri(std::string("\xff\x00\xfe", 3), "x/y"), "data:x/y;base64,/wD+");
}

}  // namespace
}  // namespace bnn::evaluation
