// report.html: the Markdown report (src/evaluation/report.h) as one HTML
// page that opens in any browser, its PNG figures embedded as data URIs so
// the file can be mailed or moved on its own.
//
// Only the Markdown that render_report writes is understood: headings (#,
// ##, ###), paragraphs, "- " lists, pipe tables whose second row sets the
// column alignment (---: right, :--- left), images on a line of their own,
// and inline `code`, **bold**, [links](url). Everything else is text, escaped.
#pragma once

#include <functional>
#include <string>

namespace bnn::evaluation {

// `image_source(src)` gives the src attribute of the image Markdown names
// `src` (e.g. a data URI of the file); `title` is the page's <title>.
std::string markdown_to_html(const std::string& markdown, const std::string& title,
                             const std::function<std::string(const std::string&)>& image_source);

// "data:<mime>;base64,..." of `bytes`.
std::string data_uri(const std::string& bytes, const std::string& mime);

}  // namespace bnn::evaluation
