"""What the controllers share (upstream pkg/controller: controller_utils.go, controller_ref_manager.go,
history/): the controller base, expectations, claiming, ControllerRevisions, discovery."""
