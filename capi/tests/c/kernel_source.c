/* Where an installed libhipdnn_backend.so finds its kernels (.ci/relocation.sh). Registers a log
 * callback at INFO, creates and destroys a handle, and prints every message; hipdnnCreate logs
 * the kernel location it resolved ("hipdnn: kernels: <location>") before it looks for a GPU, so
 * the line appears on a machine without one. Prints "kernel source: <location>" and exits 0 when
 * that line was seen and the handle was created and destroyed; exits 1 otherwise.
 *
 * Build against an install: cc kernel_source.c $(pkg-config --cflags --libs hipdnn_backend) */
#include <hipdnn_backend.h>

#include <stdio.h>
#include <string.h>

static char location[4096];

static void on_log(hipdnnUserLogCallbackHandle_t user, hipdnnSeverity_t severity, const char* msg)
{
    static const char prefix[] = "hipdnn: kernels: ";
    (void)user;
    printf("log(%d): %s\n", (int)severity, msg);
    if(strncmp(msg, prefix, sizeof prefix - 1) == 0 && location[0] == '\0')
    {
        snprintf(location, sizeof location, "%s", msg + sizeof prefix - 1);
    }
}

int main(void)
{
    hipdnnHandle_t handle = NULL;
    if(hipdnnBackendSetGlobalLogLevel_ext(HIPDNN_SEV_INFO) != HIPDNN_STATUS_SUCCESS
       || hipdnnSetUserLogCallback_ext(on_log, HIPDNN_SEV_INFO, HIPDNN_LOG_CALLBACK_MODE_SYNC, NULL)
              != HIPDNN_STATUS_SUCCESS)
    {
        fprintf(stderr, "cannot register the log callback\n");
        return 1;
    }
    if(hipdnnCreate(&handle) != HIPDNN_STATUS_SUCCESS)
    {
        char msg[HIPDNN_ERROR_STRING_MAX_LENGTH];
        hipdnnGetLastErrorString(msg, sizeof msg);
        fprintf(stderr, "hipdnnCreate failed: %s\n", msg);
        return 1;
    }
    if(hipdnnDestroy(handle) != HIPDNN_STATUS_SUCCESS)
    {
        fprintf(stderr, "hipdnnDestroy failed\n");
        return 1;
    }
    if(location[0] == '\0')
    {
        fprintf(stderr, "no 'hipdnn: kernels: ' line was logged\n");
        return 1;
    }
    printf("kernel source: %s\n", location);
    return 0;
}
