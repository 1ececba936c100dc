// The human-readable table: one line per point x kernel, written as rows
// finish so a long sweep shows progress on stdout and the table stays valid.
#pragma once
#include <string>
#include <vector>

#include "core/result.h"

namespace fa {

std::string markdown_header();  // header + separator lines
// The table's column names and one row's cells, as the Markdown table shows them
// (no '|' escaping): the HTML report's results table uses the same cells.
std::vector<std::string> markdown_columns();
std::vector<std::string> markdown_cells(const Result&);
std::string markdown_row(const Result&);
std::string markdown_table(const std::vector<Result>&);

}  // namespace fa
