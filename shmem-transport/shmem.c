/* placeholder: being written (issue 5) */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
