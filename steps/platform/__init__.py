"""The platform GPUDirect depends on (PCIe paths and ACS, IOMMU mode, link training, NIC firmware settings).

Not a stage of its own: discovery reads these facts and judges them (``checks``), and gpudirect judges them again
with GPUDirect in mind.
- ``facts``: PCIe, IOMMU and firmware facts;
- ``checks``: the verdicts.
"""
