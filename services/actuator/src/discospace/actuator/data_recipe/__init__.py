"""The `data_recipe` actuator: a Data-Juicer recipe applied to real text, and the CPU model
trained on what it keeps (see `actuator.py`, and the package's README section)."""

from discospace.actuator.data_recipe.actuator import DataRecipeActuator, DataRecipeParameters

__all__ = ["DataRecipeActuator", "DataRecipeParameters"]
