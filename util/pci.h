/* PCI naming in sysfs, shared by the transports that report a device's pciPath. */
#ifndef STU_PCI_H
#define STU_PCI_H

#include <stdbool.h>

/* Is name a PCI function as sysfs spells it: "0000:03:00.1" (domain:bus:device.function,
 * lowercase hex), and nothing after it? */
bool stu_pci_is_function(const char *name);

#endif /* STU_PCI_H */
