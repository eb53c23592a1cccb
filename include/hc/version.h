/* hc — version of the library and of the plugin ABI. */
#ifndef HC_VERSION_H
#define HC_VERSION_H

#define HC_VERSION_MAJOR 0
#define HC_VERSION_MINOR 1
#define HC_VERSION_PATCH 0
#define HC_VERSION_STRING "0.1.0"

/* Plugin ABI. The core accepts a plugin when its major equals HC_ABI_MAJOR
 * and its minor is <= HC_ABI_MINOR. Bump the minor when ops tables grow
 * (append-only), the major when anything else changes. */
#define HC_ABI_MAJOR 1
#define HC_ABI_MINOR 7

#ifdef __cplusplus
extern "C" {
#endif
/* The library's version string as built ("0.1.0"). */
const char *hc_version(void);
#ifdef __cplusplus
}
#endif
#endif
