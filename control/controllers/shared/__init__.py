"""What the controllers share (upstream pkg/controller: controller_utils.go, controller_ref_manager.go,
history/, and staging k8s.io/endpointslice): the controller base, expectations, the pod control,
claiming, ControllerRevisions, discovery, the condition/hash/finalizer helpers, and the pod and slice
rules of the Endpoints, EndpointSlice and mirroring controllers."""
