// kiln.distribute's view of the process's communicator (kiln/comm.h).
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include "bindings.h"
#include "kiln/comm.h"

namespace kiln::py {

void bind_distribute(nb::module_& m) {
  m.def(
      "comm_info",
      [] {
        comm::Communicator& c = comm::communicator();
        return std::make_tuple(c.rank(), c.size(), std::string(c.backend()));
      },
      "(rank, size, backend) of this worker; starts MPI when launched by mpirun.");
  m.def(
      "comm_fail",
      [](const std::string& message) {
        nb::gil_scoped_release release;
        comm::communicator().fail(message);
      },
      nb::arg("message"), "Tells the other workers that this one failed.");
  m.def(
      "comm_agree",
      [](const std::vector<int64_t>& values, const std::string& what) {
        nb::gil_scoped_release release;
        comm::communicator().agree(values, what);
      },
      nb::arg("values"), nb::arg("what"),
      "Raises FailedPreconditionError when the workers' values differ.");
  m.def(
      "comm_set_timeout", [](double s) { comm::communicator().set_timeout(s); }, nb::arg("seconds"),
      "The longest a collective waits for the other workers.");
  m.def(
      "comm_timeout", [] { return comm::communicator().timeout(); },
      "The collective timeout in seconds.");
}

}  // namespace kiln::py
