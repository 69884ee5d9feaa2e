// Boost.JSON's implementation, compiled once into this project instead of linked from a shared
// library: the static launcher cannot link libboost_json.so, and Debian ships no static simdjson.
#include <boost/json/src.hpp>
