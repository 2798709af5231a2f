#include "controller/cli/flags.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace facet::controller {

void Flags::Define(const std::string& name, const std::string& default_value,
                   const std::string& help, bool is_bool) {
  flags_[name] = Flag{default_value, default_value, help, is_bool};
}

absl::Status Flags::Parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (!absl::StartsWith(arg, "--")) {
      positional_.push_back(arg);
      continue;
    }
    std::string name = arg.substr(2);
    std::string value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    auto it = flags_.find(name);
    if (it == flags_.end()) return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
    if (!has_value) {
      if (it->second.is_bool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
      }
    }
    if (it->second.is_bool && value != "true" && value != "false") {
      return absl::InvalidArgumentError(
          absl::StrCat("flag --", name, " takes true or false, not \"", value, "\""));
    }
    it->second.value = value;
  }
  return absl::OkStatus();
}

const std::string& Flags::Get(const std::string& name) const { return flags_.at(name).value; }

bool Flags::GetBool(const std::string& name) const { return flags_.at(name).value == "true"; }

std::string Flags::Help() const {
  std::string out;
  for (const auto& [name, flag] : flags_) {
    absl::StrAppendFormat(&out, "  --%-24s %s", flag.is_bool ? name : name + "=VALUE", flag.help);
    if (!flag.default_value.empty()) absl::StrAppend(&out, " (default: ", flag.default_value, ")");
    out.push_back('\n');
  }
  return out;
}

}  // namespace facet::controller
