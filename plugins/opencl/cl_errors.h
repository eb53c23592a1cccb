/* Every OpenCL error code the plugin can name: X(NAME, value). The one list
 * behind ocl_err_name(); values are spelled out so that codes newer than the
 * headers' target version (or vendor codes) still get their name. */
#ifndef HC_OCL_CL_ERRORS_H
#define HC_OCL_CL_ERRORS_H

#define OCL_ERROR_LIST(X)                              \
  X(CL_SUCCESS, 0)                                     \
  X(CL_DEVICE_NOT_FOUND, -1)                           \
  X(CL_DEVICE_NOT_AVAILABLE, -2)                       \
  X(CL_COMPILER_NOT_AVAILABLE, -3)                     \
  X(CL_MEM_OBJECT_ALLOCATION_FAILURE, -4)              \
  X(CL_OUT_OF_RESOURCES, -5)                           \
  X(CL_OUT_OF_HOST_MEMORY, -6)                         \
  X(CL_PROFILING_INFO_NOT_AVAILABLE, -7)               \
  X(CL_MEM_COPY_OVERLAP, -8)                           \
  X(CL_IMAGE_FORMAT_MISMATCH, -9)                      \
  X(CL_IMAGE_FORMAT_NOT_SUPPORTED, -10)                \
  X(CL_BUILD_PROGRAM_FAILURE, -11)                     \
  X(CL_MAP_FAILURE, -12)                               \
  X(CL_MISALIGNED_SUB_BUFFER_OFFSET, -13)              \
  X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, -14) \
  X(CL_COMPILE_PROGRAM_FAILURE, -15)                   \
  X(CL_LINKER_NOT_AVAILABLE, -16)                      \
  X(CL_LINK_PROGRAM_FAILURE, -17)                      \
  X(CL_DEVICE_PARTITION_FAILED, -18)                   \
  X(CL_KERNEL_ARG_INFO_NOT_AVAILABLE, -19)             \
  X(CL_INVALID_VALUE, -30)                             \
  X(CL_INVALID_DEVICE_TYPE, -31)                       \
  X(CL_INVALID_PLATFORM, -32)                          \
  X(CL_INVALID_DEVICE, -33)                            \
  X(CL_INVALID_CONTEXT, -34)                           \
  X(CL_INVALID_QUEUE_PROPERTIES, -35)                  \
  X(CL_INVALID_COMMAND_QUEUE, -36)                     \
  X(CL_INVALID_HOST_PTR, -37)                          \
  X(CL_INVALID_MEM_OBJECT, -38)                        \
  X(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, -39)           \
  X(CL_INVALID_IMAGE_SIZE, -40)                        \
  X(CL_INVALID_SAMPLER, -41)                           \
  X(CL_INVALID_BINARY, -42)                            \
  X(CL_INVALID_BUILD_OPTIONS, -43)                     \
  X(CL_INVALID_PROGRAM, -44)                           \
  X(CL_INVALID_PROGRAM_EXECUTABLE, -45)                \
  X(CL_INVALID_KERNEL_NAME, -46)                       \
  X(CL_INVALID_KERNEL_DEFINITION, -47)                 \
  X(CL_INVALID_KERNEL, -48)                            \
  X(CL_INVALID_ARG_INDEX, -49)                         \
  X(CL_INVALID_ARG_VALUE, -50)                         \
  X(CL_INVALID_ARG_SIZE, -51)                          \
  X(CL_INVALID_KERNEL_ARGS, -52)                       \
  X(CL_INVALID_WORK_DIMENSION, -53)                    \
  X(CL_INVALID_WORK_GROUP_SIZE, -54)                   \
  X(CL_INVALID_WORK_ITEM_SIZE, -55)                    \
  X(CL_INVALID_GLOBAL_OFFSET, -56)                     \
  X(CL_INVALID_EVENT_WAIT_LIST, -57)                   \
  X(CL_INVALID_EVENT, -58)                             \
  X(CL_INVALID_OPERATION, -59)                         \
  X(CL_INVALID_GL_OBJECT, -60)                         \
  X(CL_INVALID_BUFFER_SIZE, -61)                       \
  X(CL_INVALID_MIP_LEVEL, -62)                         \
  X(CL_INVALID_GLOBAL_WORK_SIZE, -63)                  \
  X(CL_INVALID_PROPERTY, -64)                          \
  X(CL_INVALID_IMAGE_DESCRIPTOR, -65)                  \
  X(CL_INVALID_COMPILER_OPTIONS, -66)                  \
  X(CL_INVALID_LINKER_OPTIONS, -67)                    \
  X(CL_INVALID_DEVICE_PARTITION_COUNT, -68)            \
  X(CL_INVALID_PIPE_SIZE, -69)                         \
  X(CL_INVALID_DEVICE_QUEUE, -70)                      \
  X(CL_INVALID_SPEC_ID, -71)                           \
  X(CL_MAX_SIZE_RESTRICTION_EXCEEDED, -72)             \
  X(CL_INVALID_GL_SHAREGROUP_REFERENCE_KHR, -1000)     \
  X(CL_PLATFORM_NOT_FOUND_KHR, -1001)                  \
  X(CL_DEVICE_PARTITION_FAILED_EXT, -1057)             \
  X(CL_INVALID_PARTITION_COUNT_EXT, -1058)             \
  X(CL_INVALID_PARTITION_NAME_EXT, -1059)              \
  X(CL_NV_ILLEGAL_MEMORY_ACCESS_UNOFFICIAL, -9999)

#endif
