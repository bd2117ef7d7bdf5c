#include "proto/config_diff.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/text_format.h"

namespace lemrt::config {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

constexpr size_t kMaxValueChars = 60;

// One value of `field` (element `index` of a repeated one, else -1) as text.
std::string ValueText(const Message& m, const FieldDescriptor* field, int index) {
  std::string text;
  google::protobuf::TextFormat::PrintFieldValueToString(m, field, index, &text);
  if (text.size() > kMaxValueChars) text = absl::StrCat(text.substr(0, kMaxValueChars), "...");
  return text;
}

class Differ {
 public:
  explicit Differ(size_t max) : max_(max) {}

  void Compare(const Message& a, const Message& b, const std::string& path) {
    const google::protobuf::Descriptor* desc = a.GetDescriptor();
    for (int i = 0; i < desc->field_count() && !full(); ++i) {
      const FieldDescriptor* field = desc->field(i);
      const std::string name =
          path.empty() ? field->name() : absl::StrCat(path, ".", field->name());
      if (field->is_repeated()) {
        CompareRepeated(a, b, field, name);
      } else {
        CompareSingular(a, b, field, name);
      }
    }
  }

  std::vector<std::string> take() { return std::move(out_); }

 private:
  bool full() const { return out_.size() >= max_; }

  void CompareSingular(const Message& a, const Message& b, const FieldDescriptor* field,
                       const std::string& name) {
    const Reflection* ra = a.GetReflection();
    const Reflection* rb = b.GetReflection();
    const bool has_a = !field->has_presence() || ra->HasField(a, field);
    const bool has_b = !field->has_presence() || rb->HasField(b, field);
    if (!has_a && !has_b) return;
    if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
      // An unset message reads as its default instance, whose fields are all
      // unset: the phrases name the leaf fields set on one side only.
      const size_t before = out_.size();
      Compare(ra->GetMessage(a, field), rb->GetMessage(b, field), name);
      if (has_a != has_b && out_.size() == before && !full()) {
        out_.push_back(absl::StrCat(name, " ", has_a ? "set" : "unset", " -> ",
                                    has_b ? "set" : "unset"));
      }
      return;
    }
    const std::string va = has_a ? ValueText(a, field, -1) : "unset";
    const std::string vb = has_b ? ValueText(b, field, -1) : "unset";
    if (has_a != has_b || va != vb) out_.push_back(absl::StrCat(name, " ", va, " -> ", vb));
  }

  void CompareRepeated(const Message& a, const Message& b, const FieldDescriptor* field,
                       const std::string& name) {
    const int na = a.GetReflection()->FieldSize(a, field);
    const int nb = b.GetReflection()->FieldSize(b, field);
    for (int k = 0; k < std::min(na, nb) && !full(); ++k) {
      const std::string element = absl::StrCat(name, "[", k, "]");
      if (field->cpp_type() == FieldDescriptor::CPPTYPE_MESSAGE) {
        Compare(a.GetReflection()->GetRepeatedMessage(a, field, k),
                b.GetReflection()->GetRepeatedMessage(b, field, k), element);
      } else {
        const std::string va = ValueText(a, field, k), vb = ValueText(b, field, k);
        if (va != vb) out_.push_back(absl::StrCat(element, " ", va, " -> ", vb));
      }
    }
    if (na != nb && !full()) out_.push_back(absl::StrCat(name, ": ", na, " -> ", nb, " entries"));
  }

  const size_t max_;
  std::vector<std::string> out_;
};

}  // namespace

std::vector<std::string> FieldDifferences(const Message& a, const Message& b,
                                          const std::string& prefix, size_t max_differences) {
  Differ differ(max_differences);
  differ.Compare(a, b, prefix);
  return differ.take();
}

}  // namespace lemrt::config
