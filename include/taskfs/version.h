/* taskfs: the release, as every face names it (--version, the MCP
 * server's serverInfo, the A2A agent card). */
#ifndef TASKFS_VERSION_H
#define TASKFS_VERSION_H

#define TFS_VERSION "0.1.0"

#endif /* TASKFS_VERSION_H */
