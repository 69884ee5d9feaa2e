// Boost.URL's implementation, compiled into the server once (Boost.URL's own library is not one of
// our dependencies). Used to split and percent-decode request targets.
#include <boost/url/src.hpp>
