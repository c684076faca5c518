/* placeholder: being written */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
