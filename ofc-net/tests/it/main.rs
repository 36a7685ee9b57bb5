//! The integration tests of `ofc-net`, in one test binary: each file is a module.

mod net_parse_errors;
