#include "test/kube_api_server/names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace facet::testing {

const char kSubdomainMessage[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const char kLabelMessage[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

bool IsDnsLabel(absl::string_view name) {
  if (name.empty() || name.size() > 63) return false;
  for (char c : name) {
    if (!(absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-')) return false;
  }
  return name.front() != '-' && name.back() != '-';
}

bool IsDnsSubdomain(absl::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  for (absl::string_view label : absl::StrSplit(name, '.')) {
    if (!IsDnsLabel(label)) return false;
  }
  return true;
}

}  // namespace facet::testing
