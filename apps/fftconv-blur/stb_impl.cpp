// The one translation unit that compiles stb's image reader and PNG writer from its headers
// (Debian: libstb-dev). Everything else includes the headers for declarations only.
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_WRITE_IMPLEMENTATION
// Messages a user can read ("Corrupt PNG") instead of stb's terse internal ones.
#define STBI_FAILURE_USERMSG
#include <stb_image.h>
#include <stb_image_write.h>
