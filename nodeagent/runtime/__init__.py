"""The kubelet's container runtime layer: what Docker holds for each pod, seen through upstream's labels.

`types` is the runtime's view (kubecontainer.PodStatus in upstream), `labels` how a pod's containers are
named and labelled so a restarted kubelet and the GC find them again from Docker alone.
"""
