// Multi-task models: model.tasks against data.schema.labels (one label per
// task, matched by name), the loss weights, and the sources that carry
// several labels (text and TFRecord files).
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "proto/config_check.h"

namespace lemrt::config {
namespace {

// data.schema.labels: names unique, each a task's, columns >= 0.
void CheckLabels(const RunConfig& c, const std::set<std::string>& tasks, ConfigErrors& errors) {
  const InputSchema& s = c.data().schema();
  std::set<std::string> seen;
  for (int i = 0; i < s.labels_size(); ++i) {
    const LabelInput& label = s.labels(i);
    const FieldPath at = {{"data"}, {"schema"}, {"labels", i}};
    if (!seen.insert(label.name()).second) {
      errors.Fail(at, absl::StrCat("duplicate label '", label.name(), "'"));
    } else if (tasks.count(label.name()) == 0) {
      errors.Fail(at, absl::StrCat("label '", label.name(),
                                   "' is no task's: name it in model.tasks or remove it"));
    }
    if (label.has_column() && label.column() < 0) {
      errors.Fail({{"data"}, {"schema"}, {"labels", i}, {"column"}},
                  absl::StrCat("must be >= 0, got ", label.column()));
    }
  }
  for (int t = 0; t < c.model().tasks_size(); ++t) {
    if (seen.count(c.model().tasks(t).name()) == 0) {
      errors.Fail({{"model"}, {"tasks", t}, {"name"}},
                  absl::StrCat("task '", c.model().tasks(t).name(),
                               "' has no label: add data.schema.labels { name: \"",
                               c.model().tasks(t).name(), "\" }"));
    }
  }
}

}  // namespace

void CheckTasks(const RunConfig& c, ConfigErrors& errors) {
  const DlrmConfig& m = c.model();
  const DataConfig& d = c.data();
  const InputSchema& s = d.schema();
  if (m.tasks_size() == 0) {
    if (s.labels_size() > 0) {
      errors.Fail({{"data"}, {"schema"}, {"labels"}},
                  "names the labels of a multi-task model; list the tasks in model.tasks (or "
                  "use data.schema.label for one label)");
    }
    return;
  }
  std::set<std::string> names;
  for (int t = 0; t < m.tasks_size(); ++t) {
    const TaskConfig& task = m.tasks(t);
    if (task.name().empty()) {
      errors.Fail({{"model"}, {"tasks", t}, {"name"}}, "a task needs a name (its label's)");
    } else if (!names.insert(task.name()).second) {
      errors.Fail({{"model"}, {"tasks", t}, {"name"}},
                  absl::StrCat("duplicate task '", task.name(), "'"));
    }
    if (!FiniteNonNegative(task.loss_weight())) {
      errors.Fail({{"model"}, {"tasks", t}, {"loss_weight"}},
                  absl::StrCat("must be a finite number >= 0, got ", task.loss_weight()));
    }
  }
  if (!d.has_text() && !d.has_tfrecord() && !d.has_binary()) {
    errors.Fail({{"model"}, {"tasks"}},
                "several labels are read from text, TFRecord or binary files only (data.text, "
                "data.tfrecord or data.binary); synthetic and Criteo data have one label");
    return;
  }
  if (s.has_label()) {
    errors.Fail({{"data"}, {"schema"}, {"label"}},
                "a multi-task model reads data.schema.labels (one per task); remove label");
  }
  CheckLabels(c, names, errors);
}

}  // namespace lemrt::config
