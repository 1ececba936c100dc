// The human-readable table: one line per point x kernel, written as rows
// finish so a long sweep shows progress on stdout and the table stays valid.
#pragma once
#include <string>
#include <vector>

#include "core/result.h"

namespace fa {

std::string markdown_header();  // header + separator lines
std::string markdown_row(const Result&);
std::string markdown_table(const std::vector<Result>&);

}  // namespace fa
