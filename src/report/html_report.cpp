// The HTML report page and the diagnose report's evidence series.
#include "report/html_report.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "diagnose/engine.h"
#include "diagnose/evidence_series.h"
#include "diagnose/report.h"
#include "server/web_assets.h"
#include "util/json.h"

namespace gpulens::report {
namespace {

// Inlined code (the report's own script and style sheet) must not close
// its <script> or <style> early.
std::string inline_safe(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' && i + 1 < s.size() && s[i + 1] == '/') {
      std::string next(s.substr(i + 2, 6));
      for (char& c : next) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (next == "script" || next.starts_with("style")) {
        out += "<\\/";
        ++i;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// Text in an element or a quoted attribute.
std::string html_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else if (c == '"') out += "&quot;";
    else if (c == '\'') out += "&#39;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string json_for_script(std::string_view json) {
  // JSON has '<', '>' and '&' only inside strings, where \u escapes mean
  // the same characters to JSON.parse; with none left, nothing in the data
  // can end the <script> element ("</script"), open an HTML comment that
  // swallows the page ("<!--" then "<script>"), or start a character
  // reference.
  std::string out;
  out.reserve(json.size());
  for (char c : json) {
    if (c == '<') out += "\\u003c";
    else if (c == '>') out += "\\u003e";
    else if (c == '&') out += "\\u0026";
    else out += c;
  }
  return out;
}

std::string html_report(std::string_view title, std::string_view data_json, std::string_view banner) {
  const WebAsset* js = find_web_asset("report.js");
  const WebAsset* css = find_web_asset("report.css");
  std::string o;
  o.reserve(data_json.size() + 100'000);
  o += "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<meta name=\"viewport\" "
       "content=\"width=device-width, initial-scale=1\">\n<title>";
  o += html_escape(title);
  o += "</title>\n<style>\n";
  if (css) o += inline_safe(css->body);
  o += "\n</style></head><body>\n";
  if (!banner.empty()) o += "<p class=\"banner\" id=\"simulated\">" + html_escape(banner) + "</p>\n";
  o += "<main id=\"report\"><noscript>This report draws its charts with JavaScript.</noscript></main>\n"
       "<script type=\"application/json\" id=\"gpulens-data\">";
  o += json_for_script(data_json);
  o += "</script>\n<script>\n";
  if (js) o += inline_safe(js->body);
  o += "\n</script>\n</body></html>\n";
  return o;
}

void add_evidence_plots(const diagnose::SignalSet& set, const diagnose::Report& report, EvidencePlots& out) {
  for (const diagnose::HostReport& hr : report.hosts) {
    for (const diagnose::GpuReport& gr : hr.gpus) {
      for (const diagnose::Finding& f : gr.findings) {
        for (const diagnose::Evidence& e : f.evidence) {
          diagnose::Series s = diagnose::evidence_series(set, hr.host, gr.gpu, e.signal);
          if (s.empty()) continue;
          out.push_back({hr.host, gr.gpu, f.cause, e.signal, e.threshold, std::move(s)});
        }
      }
    }
  }
}

void add_evidence_plots(const diagnose::Report& report, EvidencePlots& out) {
  for (const diagnose::HostReport& hr : report.hosts) {
    for (const diagnose::GpuReport& gr : hr.gpus) {
      for (const diagnose::Finding& f : gr.findings) {
        for (const diagnose::Evidence& e : f.evidence) {
          if (!e.series.empty()) out.push_back({hr.host, gr.gpu, f.cause, e.signal, e.threshold, e.series});
        }
      }
    }
  }
}

std::string diagnose_report_data(const diagnose::Report& report, const EvidencePlots& plots, std::string_view source) {
  std::string o = "{\"kind\":\"diagnose\",\"source\":";
  append_json_string(o, source);
  o += ",\"report\":";
  o += diagnose::report_json(report);
  o += ",\"evidence\":[";
  for (size_t i = 0; i < plots.size(); ++i) {
    const EvidencePlot& p = plots[i];
    if (i) o += ',';
    o += "{\"host\":";
    append_json_string(o, p.host);
    o += ",\"gpu\":";
    append_json_string(o, p.gpu);
    o += ",\"cause\":";
    append_json_string(o, p.cause);
    o += ",\"signal\":";
    append_json_string(o, p.signal);
    o += ",\"threshold\":";
    append_json_number(o, p.threshold);
    o += ",\"t\":[";
    for (size_t k = 0; k < p.points.size(); ++k) {
      if (k) o += ',';
      o += std::to_string(p.points[k].t_ms);
    }
    o += "],\"v\":[";
    for (size_t k = 0; k < p.points.size(); ++k) {
      if (k) o += ',';
      append_json_number(o, p.points[k].v);
    }
    o += "]}";
  }
  o += "]}";
  return o;
}

std::string trace_report_data(std::string_view trace_json) {
  std::string o = "{\"kind\":\"trace\",\"trace\":";
  std::string_view t = trace_json;
  while (!t.empty() && std::isspace(static_cast<unsigned char>(t.back()))) t.remove_suffix(1);
  o += t;
  o += '}';
  return o;
}

}  // namespace gpulens::report
