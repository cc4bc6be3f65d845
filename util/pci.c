/* PCI naming in sysfs. */
#include "util/pci.h"

#include <stddef.h>

bool stu_pci_is_function(const char *name)
{
    static const char shape[] = "xxxx:xx:xx.x";
    for (size_t i = 0; i < sizeof(shape) - 1; i++) {
        char c = name[i];
        bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
        if (shape[i] == 'x' ? !hex : c != shape[i])
            return false;
    }
    return name[sizeof(shape) - 1] == '\0';
}
